/** The server in one import: buildServer, its options, and the pieces `railyard serve` starts. */
export { buildServer, type ServerDeps, type Railyard, type LogLevel } from './app.js';
export { QueueService, normaliseRepo, type QueueHandle, type EffectHandler, type QueueServiceOptions } from './queue/service.js';
export { TokenAuth } from './auth.js';
export { HttpError } from './errors.js';
export { RawAnswer, type Handler, type Handlers, type RequestContext } from './routes/types.js';
export { flakyHandlers, requireOrg, type FlakyHandlers } from './routes/flaky.js';
export { renderMetrics, METRICS_CONTENT_TYPE } from './queue/metrics.js';
