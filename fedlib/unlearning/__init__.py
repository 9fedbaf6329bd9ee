"""Federated unlearning: SIFU and its baselines (the SIFU paper), and the verification every unlearning chapter uses."""

from fedlib.unlearning.baselines import FedAccum, UpdateStore, dp, dp_sigma, dp_training, fedaccum, federaser, fine_tune
from fedlib.unlearning.baselines import last, scratch
from fedlib.unlearning.sifu import (
    Request,
    UnlearningRun,
    branch_point,
    c_delta,
    noise_std,
    psi_star,
    restart_index,
    sifu,
)
from fedlib.unlearning.stage import Federation, Stage, StageConfig, run_stage
from fedlib.unlearning.verify import (
    Controls,
    Cost,
    Trigger,
    Verification,
    membership_attack,
    membership_auc,
    plant_backdoor,
    verify,
    verify_with_controls,
)

__all__ = [
    "FedAccum", "UpdateStore", "dp", "dp_sigma", "dp_training", "fedaccum", "federaser", "fine_tune", "last",
    "scratch", "Request", "UnlearningRun", "branch_point", "c_delta", "noise_std", "psi_star", "restart_index",
    "sifu", "Federation", "Stage", "StageConfig", "run_stage", "Controls", "Cost", "Trigger", "Verification", "membership_attack",
    "membership_auc", "plant_backdoor", "verify", "verify_with_controls",
]
