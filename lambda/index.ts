// The Lambda entry point. Configuration is parsed at cold start: a bad variable fails the
// init with one error naming every problem, before any notification is touched.
import { createRuntime } from './runtime.js';

export const handler = createRuntime(process.env);
