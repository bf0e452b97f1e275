/** Every golden family runner; adding a family = one file in this folder + one import line here. */
import './advantage';
import './aggLoss';
import './aglTrajectory';
import './aglRolloutLevelAdvantage';
import './klPenalty';
import './policyLoss';
import './rolloutCorrection';
import './aglTrainStep';
