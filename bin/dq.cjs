#!/usr/bin/env node
// `dq`, the operators' command line (lib/cli/): runs the TypeScript entry through tsx's require
// hook, so a fresh clone needs no build step, only `npm ci`.
require('tsx/cjs/api').register();
require('../lib/cli/main.ts')
  .main()
  .catch((error) => {
    process.stderr.write(`dq: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  });
