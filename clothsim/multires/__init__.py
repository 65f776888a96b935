"""Multi-resolution simulation with explicit buffer lifecycles (see :mod:`clothsim.multires.simulator`).

    from clothsim.multires import LevelSet, MultiResSimulator
"""

from .coarse_correction import CoarseCorrection
from .energy import mechanical_energy
from .fas import FASCorrection
from .forces import ForceModel, conservative_forces
from .levels import LevelSet
from .memory import estimate_simulator_bytes, independent_figures, live_warp_array_bytes, simulator_owners
from .proxy import ColliderProxy, cluster_proxy
from .render_embedding import EmbeddedRenderMesh
from .simulator import MemoryBudgetError, MultiResSimulator, SwitchReport

__all__ = ["LevelSet", "EmbeddedRenderMesh", "CoarseCorrection", "FASCorrection", "ForceModel", "conservative_forces",
           "ColliderProxy", "cluster_proxy", "MultiResSimulator", "MemoryBudgetError", "SwitchReport", "mechanical_energy",
           "estimate_simulator_bytes", "independent_figures", "live_warp_array_bytes", "simulator_owners"]
