// This module is browser compatible.

/**
 * The command-line flag reader the server and run CLIs share: `--name value`,
 * `--name=value` and switches, each given at most once.
 *
 * @module
 */

/** The flags one command takes. */
export interface FlagSpec {
  /** Flags that take a value. */
  readonly values: ReadonlySet<string>;
  /** Flags that take no value. */
  readonly switches: ReadonlySet<string>;
  /** Whether arguments that are not flags are kept as positionals. */
  readonly positionals: boolean;
  /** Whether a value may be empty. */
  readonly emptyValues: boolean;
  /** What the flags belong to, for errors: "this server", "this command". */
  readonly owner: string;
}

/** The flags found on a command line. */
export interface ReadFlags {
  readonly values: Map<string, string>;
  readonly switches: Set<string>;
  readonly positionals: string[];
}

/** Shortens text for an error message. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * Reads a command line against a spec.
 *
 * @throws {TypeError} For a flag given twice, a missing value or an unknown
 * flag.
 */
export function readFlags(args: readonly string[], spec: FlagSpec): ReadFlags {
  const values = new Map<string, string>();
  const switches = new Set<string>();
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (values.has(name) || switches.has(name)) {
      throw new TypeError(`Cannot read the flags: ${name} is given twice`);
    }
    if (spec.values.has(name)) {
      const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
      if (
        value === undefined || value.startsWith("--") ||
        (value === "" && !spec.emptyValues)
      ) {
        throw new TypeError(`Cannot read the flags: ${name} needs a value`);
      }
      values.set(name, value);
    } else if (spec.switches.has(name) && eq < 0) {
      switches.add(name);
    } else if (spec.positionals && !arg.startsWith("-")) {
      positionals.push(arg);
    } else {
      throw new TypeError(
        `Cannot read the flags: ${
          JSON.stringify(clip(arg, 60))
        } is not a flag of ${spec.owner}`,
      );
    }
  }
  return { values, switches, positionals };
}
