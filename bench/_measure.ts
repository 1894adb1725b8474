/**
 * Helpers the benchmarks share: flags, medians, and what the machine was
 * doing (load average, CPU time of a process).
 *
 * @module
 */

/** A positive integer flag `--name N`, or `fallback`. */
export function flag(name: string, fallback: number): number {
  const index = Deno.args.indexOf(`--${name}`);
  const value = index < 0 ? undefined : Number(Deno.args[index + 1]);
  return value !== undefined && Number.isInteger(value) && value > 0
    ? value
    : fallback;
}

/** The median of `values`. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The load average of the last 1, 5 and 15 minutes, or "n/a". */
export async function loadAverage(): Promise<string> {
  try {
    return (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3)
      .join(" ");
  } catch {
    return "n/a";
  }
}

/** CPU time (user + system) of a process so far, in clock ticks; NaN off Linux. */
export async function cpuTicks(pid: number): Promise<number> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the whole line.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return NaN;
  }
}

/** Clock ticks per second of `cpuTicks`. */
export async function clockTicksPerSecond(): Promise<number> {
  try {
    const { stdout } = await new Deno.Command("getconf", {
      args: ["CLK_TCK"],
    }).output();
    const value = Number(new TextDecoder().decode(stdout).trim());
    return value > 0 ? value : 100;
  } catch {
    return 100;
  }
}
