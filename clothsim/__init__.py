"""clothsim: garment simulation in Warp — the researchers' API.

    import clothsim as cs
    cloth = cs.Cloth.grid(size=(1.0, 1.0), resolution=(32, 32), fabric="cotton")
    cloth.pin(cloth.boundary("top"))
    sim = cs.Simulator(cloth, device="cpu")
    sim.step()
"""
from .cloth import Cloth
from .colliders import Collider
from .errors import ClothsimError, InputError, SimulationError, StaleViewError
from .fabric import Fabric
from .simulator import Simulator
from .multires import LevelSet, MemoryBudgetError, MultiResSimulator
from .scene import load_scene

__version__ = "0.1.0"
__all__ = ["Cloth", "Collider", "Fabric", "Simulator", "MultiResSimulator", "LevelSet", "MemoryBudgetError",
           "ClothsimError", "InputError", "SimulationError", "StaleViewError", "load_scene", "__version__"]
