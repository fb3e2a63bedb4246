// Loaded into every test process (scripts/test.mjs): fetch opens a new connection per request.
//
// serverless offline's HTTP server closes a keep-alive connection after 5 s idle; fetch's pool
// keeps one for 4 s. On a busy machine the two timers race, and a request written to a pooled
// connection the server is closing fails with "other side closed" (UND_ERR_SOCKET) before the
// server read it. Retrying would hide real failures; with no pooled connections there is no race.
// The product's own client (lib/client.ts) keeps the runtime's default, and retries safely.
import { Agent, setGlobalDispatcher } from 'undici';

setGlobalDispatcher(new Agent({ pipelining: 0 })); // pipelining 0: no keep-alive (undici docs)
