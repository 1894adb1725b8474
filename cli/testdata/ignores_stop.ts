/**
 * A command that heeds no stop: it listens for SIGINT and SIGTERM, says so,
 * and then waits out a minute whatever its stop signal says, as a clean-up
 * that hangs would. The test sends it two signals.
 */
import { listenForStop } from "../_program.ts";

using stop = listenForStop("test");
stop.signal.addEventListener("abort", () => console.log("stopping"));
console.log("listening");
await new Promise((resolve) => setTimeout(resolve, 60_000));
