/** The getMergeQueueDoctor handler: the queue's own notices (queue/doctor.ts) and the forge's permissions (the driver's doctor role). */
import { isoTime, type DoctorNotice, type DoctorResponse, type Repo } from '../../contract/index.js';
import type { ForgeDoctor } from '../../forge/types.js';
import type { Store } from '../../store/index.js';
import { queueNotices } from '../queue/doctor.js';
import type { QueueService } from '../queue/service.js';
import type { Handlers } from './types.js';

/** How long the forge may take to say what the credentials may do before the doctor answers without it. */
const FORGE_WAIT_MS = 15_000;
/**
 * How long the forge's answer is reused: the dashboard asks every 30 s per open page, and each ask
 * costs GitHub requests from the same rate limit the queue works with. Failures are not kept.
 */
const FORGE_KEEP_MS = 5 * 60_000;

async function forgeNotices(
  doctor: ForgeDoctor | undefined,
  repo: Parameters<ForgeDoctor['permissions']>[0],
  branch: string,
): Promise<DoctorNotice[]> {
  if (!doctor) return [];
  let timer: NodeJS.Timeout | undefined;
  try {
    const found = await Promise.race([
      doctor.permissions(repo, branch),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${FORGE_WAIT_MS / 1000} s`)),
          FORGE_WAIT_MS,
        );
      }),
    ]);
    return found.map((n) => ({ kind: 'forge_permission', permission: n.permission, text: n.text }));
  } catch (error) {
    const why = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return [
      {
        kind: 'forge_permission',
        permission: 'unknown',
        text: `The forge did not say what the server's credentials may do in this repository (${why}): run the doctor again, and check the server's log if this stays.`,
      },
    ];
  } finally {
    clearTimeout(timer);
  }
}

export function doctorHandlers(
  service: QueueService,
  store: Store,
  now: () => number,
  doctor: ForgeDoctor | undefined,
): Pick<Handlers, 'getMergeQueueDoctor'> {
  const kept = new Map<string, { at: number; notices: DoctorNotice[] }>();
  const forgeOf = async (queue: { repo: Repo; model: { branch: string } }): Promise<DoctorNotice[]> => {
    const key = `${queue.repo.host}/${queue.repo.owner}/${queue.repo.name}:${queue.model.branch}`;
    const hit = kept.get(key);
    if (hit && Date.now() - hit.at < FORGE_KEEP_MS) return hit.notices;
    const notices = await forgeNotices(doctor, queue.repo, queue.model.branch);
    if (notices.some((n) => n.permission === 'unknown')) kept.delete(key);
    else kept.set(key, { at: Date.now(), notices });
    return notices;
  };
  return {
    async getMergeQueueDoctor(input, { org }) {
      const queue = await service.replicaSync.queue(org, input.repo, input.targetBranch);
      const [since, forge] = await Promise.all([store.queues.stateSince(queue.id), forgeOf(queue)]);
      const at = now();
      const answer: DoctorResponse = {
        checkedAt: isoTime(at),
        notices: [...queueNotices(service.registry.current(queue).model, since, at), ...forge],
      };
      return answer;
    },
  };
}
