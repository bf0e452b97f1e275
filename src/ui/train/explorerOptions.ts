/**
 * The Trace and Advantages views' trainer options that reproduce what a training run did with its batch: a
 * kept step trace opened from the Train tab is shown under the run's own estimator, loss, aggregation level,
 * limits and rollout correction — the loop's own mapping of its config onto core's options (objective.ts).
 */
import type { TrainerOptions } from '../../core/pipeline/options';
import type { TrainConfig } from '../../train/config';
import { trainerOptions } from '../../train/objective';

export function explorerOptionsOf(c: TrainConfig): TrainerOptions {
  return trainerOptions(c);
}
