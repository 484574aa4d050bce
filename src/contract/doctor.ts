/**
 * The getMergeQueueDoctor extension's schemas: what keeps a queue from working that a person has
 * to fix (required checks that never report, a queue paused for long, PRs that wait for long,
 * forge permissions the server lacks), one sentence each. `railyard mq doctor` and the
 * dashboard's queue page show them.
 */
import { z } from 'zod';

export const DOCTOR_NOTICE_KINDS = [
  'required_check_never_reported',
  'queue_paused',
  'queue_frozen',
  'pr_not_ready',
  'forge_permission',
] as const;
export type DoctorNoticeKind = (typeof DOCTOR_NOTICE_KINDS)[number];

/** How far back the doctor looks for reports of a required check: 7 days, but at least the last 10 finished runs. */
export const DOCTOR_CHECK_WINDOW_DAYS = 7;
export const DOCTOR_CHECK_WINDOW_RUNS = 10;
/** A queue paused for longer than this is named. */
export const DOCTOR_PAUSED_MINUTES = 60;
/** A PR not ready for longer than this is named. */
export const DOCTOR_NOT_READY_HOURS = 24;

export const DoctorNotice = z.object({
  kind: z.enum(DOCTOR_NOTICE_KINDS),
  /** One sentence: what is wrong and what to do. */
  text: z.string(),
  /** required_check_never_reported: the check's name. */
  check: z.string().optional(),
  /** pr_not_ready: the PR's number. */
  prNumber: z.number().int().optional(),
  /** forge_permission: what the server cannot do (`push`, `statuses`, `rules`…). */
  permission: z.string().optional(),
});
export type DoctorNotice = z.infer<typeof DoctorNotice>;

export const DoctorResponse = z.object({
  /** When the doctor looked (ISO 8601). */
  checkedAt: z.string(),
  /** Empty when nothing is wrong. */
  notices: z.array(DoctorNotice),
});
export type DoctorResponse = z.infer<typeof DoctorResponse>;
