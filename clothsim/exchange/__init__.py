"""Import and export of garment and avatar meshes, and the on-disk frame cache.

    from clothsim.exchange import import_mesh, import_cloth, export_obj, export_glb, export_usd, FrameCache

* :func:`import_mesh` reads OBJ, GLB/glTF and USD/USDA/USDC into an :class:`ImportedMesh` (metres,
  Y up, welded for physics, UVs per corner); :func:`import_cloth` makes a :class:`clothsim.Cloth`.
* :func:`export_obj`, :func:`export_glb`, :func:`export_frames` and :func:`export_usd` write the
  draped result (one frame, a sequence, or a time-sampled USD stage), atomically.
* :class:`FrameCache` keeps simulated frames on disk, quantised and compressed, crash-safe.

No GL imports here (simulation side of DESIGN.md).
"""

from .export import export_frames, export_glb, export_obj, uv_layout
from .framecache import FrameCache, StaleCacheError, metadata_hash
from .mesh import ImportedMesh, UVSplit
from .meshio import SUPPORTED_EXTENSIONS, import_cloth, import_mesh
from .usd import export_usd

__all__ = ["FrameCache", "ImportedMesh", "SUPPORTED_EXTENSIONS", "StaleCacheError", "UVSplit", "export_frames",
           "export_glb", "export_obj", "export_usd", "import_cloth", "import_mesh", "metadata_hash", "uv_layout"]
