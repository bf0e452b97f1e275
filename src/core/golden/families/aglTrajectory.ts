import { runAglTrajectoryCase } from '../aglTrajectory';
import { registerFamily } from '../registry';

/**
 * Agent Lightning RolloutAdapter.get_train_data_batch (golden family `agl_trajectory`). The case runner reports
 * an upstream exception as an Error whose message starts with the upstream class ("RuntimeError: …"); the
 * runner compares `name` against the recorded class, so lift it there.
 */
registerFamily(
  'agl_trajectory',
  (c) => {
    try {
      return runAglTrajectoryCase(c);
    } catch (e) {
      const upstream = e instanceof Error ? /^([A-Za-z]+Error): /.exec(e.message) : null;
      if (upstream && e instanceof Error) e.name = upstream[1];
      throw e;
    }
  },
  ['n_rows', 'prompt_ids', 'response_ids', 'response_mask', 'turn_index', 'position_ids', 'counters'],
);
