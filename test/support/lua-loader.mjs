// Makes `import source from '../lua/x.lua'` (and `.html`, `.yaml`) yield the file's text under Node, as esbuild's text
// loader does in the Lambda bundle: for require() (tsx compiles our TypeScript to CommonJS) and
// for ESM imports alike.
import { readFileSync } from 'node:fs';
import Module, { register } from 'node:module';

Module._extensions['.lua'] =
  Module._extensions['.html'] =
  Module._extensions['.yaml'] =
    (module, filename) => {
      module.exports = readFileSync(filename, 'utf8');
    };

register(
  'data:text/javascript,' +
    encodeURIComponent(`
      import { readFileSync } from 'node:fs';
      import { fileURLToPath } from 'node:url';
      export async function load(url, context, next) {
        if (!url.endsWith('.lua') && !url.endsWith('.html') && !url.endsWith('.yaml')) return next(url, context);
        const text = readFileSync(fileURLToPath(url), 'utf8');
        return { format: 'module', shortCircuit: true, source: 'export default ' + JSON.stringify(text) };
      }
    `),
);
