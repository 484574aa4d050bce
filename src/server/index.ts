/** The server in one import: buildServer, its options, and the pieces `railyard serve` starts. */
export { buildServer, type ServerDeps, type Railyard, type LogLevel } from './app.js';
export { QueueService, type EffectHandler, type QueueServiceOptions } from './queue/service.js';
export type { QueueHandle } from './queue/handle.js';
export { normaliseRepo } from './queue/keys.js';
export { composeServer, type ServerParts } from './compose.js';
export { TokenAuth } from './access/auth.js';
export { ApiError, HttpError } from './errors.js';
export { RawAnswer, type Handler, type Handlers, type RequestContext } from './routes/types.js';
export { flakyHandlers, requireOrg, type FlakyHandlers } from './routes/flaky.js';
export { renderMetrics, METRICS_CONTENT_TYPE } from './queue/metrics.js';
