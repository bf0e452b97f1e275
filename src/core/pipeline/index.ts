/** The trainer pipeline: options (upstream names and defaults), the whole view, and the pieces a trainer calls. */
export * from './dataMetrics';
export * from './options';
export * from './perCall';
export * from './sign';
export * from './trainer';
export * from './update';
