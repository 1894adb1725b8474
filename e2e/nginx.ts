/**
 * Starts Debian's nginx (`/usr/sbin/nginx`) in the foreground over a staged
 * tree, configured from the tree's own `_nginx.conf` snippet, on a free
 * port of 127.0.0.1, with its configuration, pid file, logs and temporary
 * folders in a temporary folder of its own. Optionally it also serves a
 * site folder (the test page and the bundles) at `/`, so the page and the
 * tree share one origin and no cordon code answers any request.
 *
 * Used by the browser leg (`staged.spec.ts`, in Node) and the staged
 * benchmark (in Deno), so it uses `node:` modules only.
 *
 * @module
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/**
 * Stages the built-in fixture packs into `out` with the project's own
 * command: `cli/stage.ts` run by `CORDON_DENO` (or `deno` on the PATH).
 */
export function stageFixturePacks(out: string): void {
  const deno = process.env.CORDON_DENO ?? "deno";
  execFileSync(deno, [
    "run",
    "--config",
    "deno.json",
    "--allow-read",
    "--allow-write",
    "cli/stage.ts",
    "--packs",
    "fixtures/packs",
    "--out",
    out,
  ], { cwd: ROOT, stdio: "pipe", env: { ...process.env, NO_COLOR: "1" } });
}

/** Where nginx is installed (`apt-get install -y nginx`). */
export const NGINX: string = process.env.CORDON_NGINX ?? "/usr/sbin/nginx";

/** A running nginx. */
export interface StaticServer extends AsyncDisposable {
  /** Its origin, `http://127.0.0.1:<port>`. */
  origin: string;
  /** Stops nginx and removes its temporary folder. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startNginx}. */
export interface StartNginxOptions {
  /** The staged tree: nginx's root, with its `_nginx.conf` included. */
  treeDir: string;
  /** A folder served at `/` for every path the snippet does not claim. */
  siteDir?: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null
        ? address.port
        : 0;
      server.close(() => resolve(port));
    });
  });
}

function config(dir: string, port: number, options: StartNginxOptions): string {
  const site = options.siteDir === undefined ? "" : `
    location / {
      root ${options.siteDir};
      types {
        text/html html;
        text/javascript js;
        application/json json;
      }
      add_header Cache-Control "no-store";
    }`;
  return `daemon off;
master_process off;
worker_processes 1;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${join(dir, "client_body")};
  proxy_temp_path ${join(dir, "proxy")};
  fastcgi_temp_path ${join(dir, "fastcgi")};
  uwsgi_temp_path ${join(dir, "uwsgi")};
  scgi_temp_path ${join(dir, "scgi")};
  sendfile on;
  server {
    listen 127.0.0.1:${port};
    root ${options.treeDir};
    include ${join(options.treeDir, "_nginx.conf")};${site}
  }
}
`;
}

async function waitUntilServing(
  child: ChildProcess,
  origin: string,
  dir: string,
): Promise<void> {
  const exited = new Promise<never>((_, reject) => {
    child.once(
      "error",
      (error) =>
        reject(
          new Error(
            `Cannot start ${NGINX}: ${error.message}; install nginx (apt-get install -y nginx)`,
          ),
        ),
    );
    child.once("exit", async (code) => {
      const log = await readFile(join(dir, "error.log"), "utf8").catch(() =>
        ""
      );
      reject(new Error(`nginx exited with code ${code}: ${log.trim()}`));
    });
  });
  exited.catch(() => {});
  for (let attempt = 0; attempt < 100; attempt++) {
    const answered = await Promise.race([
      fetch(`${origin}/index.json`).then(async (response) => {
        await response.body?.cancel();
        return true;
      }, () => false),
      exited,
    ]);
    if (answered) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("nginx did not answer within 5 s");
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGQUIT");
  });
}

/**
 * Starts nginx over a staged tree. The caller owns the server and must
 * stop it (or `await using` it).
 *
 * @param options The staged tree and an optional site folder.
 * @returns The running server.
 * @throws {Error} When nginx is missing or does not start; the message
 * carries its error log.
 */
export async function startNginx(
  options: StartNginxOptions,
): Promise<StaticServer> {
  const dir = await mkdtemp(join(tmpdir(), "cordon-nginx-"));
  let lastError: unknown;
  // A free port may be taken before nginx binds it: try a few.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const file = join(dir, "nginx.conf");
    await writeFile(file, config(dir, port, options));
    const child = spawn(NGINX, [
      "-p",
      dir,
      "-c",
      file,
      "-e",
      join(dir, "error.log"),
    ], {
      stdio: "ignore",
    });
    const origin = `http://127.0.0.1:${port}`;
    try {
      await waitUntilServing(child, origin, dir);
    } catch (error) {
      lastError = error;
      await stopChild(child);
      continue;
    }
    const stop = async () => {
      await stopChild(child);
      await rm(dir, { recursive: true, force: true });
    };
    return { origin, stop, [Symbol.asyncDispose]: stop };
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}
