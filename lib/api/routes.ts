/**
 * Every route of the HTTP API, as functions/ imports them: each takes a parsed request (./http.ts)
 * and returns status and body, and carries the scope a key needs to call it. They live beside the
 * service functions of their resource: ./job-routes.ts, ./topic-routes.ts, ./schedule-routes.ts,
 * ./key-routes.ts.
 */
export { addJob, addJobs, deleteJob, getJob, putJob } from './job-routes';
export {
  cancelGroup,
  flows,
  listDead,
  listGroup,
  listJobs,
  listTopics,
  pauseTopic,
  redrive,
  resumeTopic,
} from './topic-routes';
export {
  deleteSchedule,
  getSchedule,
  listSchedules,
  pauseSchedule,
  putSchedule,
  resumeSchedule,
} from './schedule-routes';
export { createKey, keys, listKeys, revokeKey, whoami } from './key-routes';
