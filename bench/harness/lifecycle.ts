/**
 * What a bench starts is stopped when it ends: on success, on error, and on Ctrl-C or SIGTERM
 * (then every cleanup runs, newest first, and the bench exits 130). Every process is stopped by
 * its PID or process group, never by name.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const cleanups: (() => Promise<void>)[] = [];

/** Registers `cleanup` to run when the bench ends or is interrupted; returns a function that forgets it unrun. */
export function whenStopping(cleanup: () => Promise<void>): () => void {
  cleanups.push(cleanup);
  return () => {
    const i = cleanups.lastIndexOf(cleanup);
    if (i >= 0) cleanups.splice(i, 1);
  };
}

/** Registers `stop` (see whenStopping); returns a function that runs it now, once, and forgets it. */
export function track(stop: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  const once = () => (done ??= stop().catch((error: unknown) => console.error('cleanup failed:', error)));
  const forget = whenStopping(once);
  return async () => {
    await once();
    forget();
  };
}

/** Runs every cleanup not yet run, newest first. */
export async function stopEverything(): Promise<void> {
  for (const stop of cleanups.splice(0).reverse())
    await stop().catch((error: unknown) => console.error('cleanup failed:', error));
}

/**
 * Runs a bench's `main`: an error is printed and exits 1; whatever it started is stopped at the
 * end, and on Ctrl-C or SIGTERM. `forceExit`: exits when done even if handles are left open (a
 * runtime's timers).
 */
export function runBench(main: () => Promise<void>, options: { forceExit?: boolean } = {}): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\ngot ${signal}: stopping every process this bench started`);
      void stopEverything().finally(() => process.exit(130));
    });
  }
  void main()
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    })
    .finally(() => stopEverything())
    .then(() => {
      if (options.forceExit) process.exit(process.exitCode ?? 0);
    });
}

/** Runs a child process to completion (stopped by its PID if the bench is interrupted meanwhile). */
export function runChild(
  cmd: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const done = track(async () => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
        process.kill(child.pid, 'SIGTERM');
    });
    child.once('error', (error) => void done().then(() => reject(error)));
    child.once(
      'close',
      (code) => void done().then(() => resolve({ code, stdout, stderr, ms: performance.now() - started })),
    );
  });
}
