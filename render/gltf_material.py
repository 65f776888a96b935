"""The material of a glTF 2.0 garment (``.glb`` / ``.gltf``) as a :class:`render.Material`.

Reads the JSON of the file directly (trimesh, which reads the geometry, drops the sheen extension
and skips missing texture files silently): ``pbrMetallicRoughness`` (baseColorFactor,
baseColorTexture, metallicFactor, roughnessFactor, metallicRoughnessTexture), ``normalTexture``
(with its scale) and ``KHR_materials_sheen`` (sheenColorFactor, sheenRoughnessFactor). Images
embedded in a GLB's binary chunk (or as data URIs) are kept in memory
(:class:`render.material.EmbeddedImage`); external ones are files relative to the glTF file and
must exist. Not read: sheen textures, emissive, occlusion, alpha modes, KHR_texture_transform and
texCoord sets other than 0 (an error names the texture).

UVs: glTF puts (0, 0) at the image's top-left; the renderer samples textures that way. Importers
(trimesh, clothsim.exchange) turn glTF UVs into the OBJ convention (v up), so mesh UVs read through
them must be flipped back with :func:`gltf_uv` before drawing with these textures.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np

import clothsim as cs

from .material import EmbeddedImage, Material

GLB_MAGIC = 0x46546C67  # "glTF"
_JSON_CHUNK = 0x4E4F534A
_BIN_CHUNK = 0x004E4942


def _read_gltf(path: Path) -> tuple[dict, bytes | None]:
    data = path.read_bytes()
    if path.suffix.lower() == ".glb" or data[:4] == b"glTF":
        if len(data) < 20:
            raise cs.InputError(f"{path}: not a GLB file (too short)")
        magic, version, _length = struct.unpack_from("<III", data, 0)
        if magic != GLB_MAGIC or version != 2:
            raise cs.InputError(f"{path}: not a glTF 2.0 binary (magic {magic:#x}, version {version})")
        offset, doc, binary = 12, None, None
        while offset + 8 <= len(data):
            clen, ctype = struct.unpack_from("<II", data, offset)
            chunk = data[offset + 8: offset + 8 + clen]
            if ctype == _JSON_CHUNK:
                doc = json.loads(chunk.decode("utf-8"))
            elif ctype == _BIN_CHUNK and binary is None:
                binary = chunk
            offset += 8 + clen
        if doc is None:
            raise cs.InputError(f"{path}: GLB without a JSON chunk")
        return doc, binary
    try:
        return json.loads(data.decode("utf-8")), None
    except ValueError as e:
        raise cs.InputError(f"{path}: cannot parse the glTF JSON ({e})") from None


def _used_material_indices(doc: dict, select: str | None) -> list[int]:
    """Material indices of the primitives drawn by the scene's nodes (or the nodes/meshes named
    ``select``), in order of first use."""
    meshes = doc.get("meshes", [])
    nodes = doc.get("nodes", [])
    mesh_ids = []
    for node in nodes:
        if "mesh" not in node:
            continue
        m = node["mesh"]
        if select is not None and select not in (node.get("name"), meshes[m].get("name") if m < len(meshes) else None):
            continue
        mesh_ids.append(m)
    if not nodes and select is None:
        mesh_ids = list(range(len(meshes)))
    out: list[int] = []
    for m in mesh_ids:
        for prim in meshes[m].get("primitives", []) if m < len(meshes) else []:
            if "material" in prim and prim["material"] not in out:
                out.append(prim["material"])
    return out


def _image(doc: dict, binary: bytes | None, path: Path, tex_info: dict, where: str, srgb_key: str):
    """A texture reference -> Path (external file, must exist) or EmbeddedImage."""
    if tex_info.get("texCoord", 0) != 0:
        raise cs.InputError(f"{path}: {where}: texCoord {tex_info['texCoord']} is not supported (TEXCOORD_0 only)")
    try:
        texture = doc["textures"][tex_info["index"]]
        src = texture["source"]
        image = doc["images"][src]
    except (KeyError, IndexError, TypeError):
        raise cs.InputError(f"{path}: {where}: texture index {tex_info.get('index')!r} does not name an image "
                            f"in the file") from None
    if "uri" in image:
        uri = image["uri"]
        if uri.startswith("data:"):
            head, _, payload = uri.partition(",")
            return EmbeddedImage(source=str(path), key=f"{srgb_key}:image{src}", data=base64.b64decode(payload))
        from urllib.parse import unquote

        file = (path.parent / unquote(uri)).resolve()
        if not file.is_file():
            raise cs.InputError(f"{path}: {where}: image file not found: {file} (images[{src}].uri {uri!r}, "
                                f"relative to the glTF file)")
        return file
    view_id = image.get("bufferView")
    if view_id is None or binary is None:
        raise cs.InputError(f"{path}: {where}: images[{src}] has neither a uri nor a bufferView in the GLB's binary chunk")
    view = doc["bufferViews"][view_id]
    if view.get("buffer", 0) != 0:
        raise cs.InputError(f"{path}: {where}: images[{src}] lives in an external buffer (not supported)")
    start = view.get("byteOffset", 0)
    return EmbeddedImage(source=str(path), key=f"image{src}", data=bytes(binary[start:start + view["byteLength"]]))


def read_gltf_material(path, *, select: str | None = None) -> Material | None:
    """The material of the garment in a ``.glb``/``.gltf`` file, or None when it has none.

    A garment mesh is drawn with one material: the first one its primitives use (the others are
    ignored; ``select`` picks the node or mesh as in :func:`clothsim.exchange.import_mesh`).

    Raises:
        InputError: unreadable file, a texture that names no image, a missing image file (the
            message names the file, the material and the texture slot).
    """
    path = Path(path)
    if not path.is_file():
        raise cs.InputError(f"mesh file not found: {path}")
    doc, binary = _read_gltf(path)
    used = _used_material_indices(doc, select)
    if not used:
        return None
    idx = used[0]
    try:
        mat = doc["materials"][idx]
    except (KeyError, IndexError):
        raise cs.InputError(f"{path}: a primitive uses material {idx}, which the file does not define") from None
    name = mat.get("name") or f"material{idx}"
    where = f"materials[{idx}] ({name!r})"
    pbr = mat.get("pbrMetallicRoughness", {})
    sheen = mat.get("extensions", {}).get("KHR_materials_sheen")
    kw = {}
    if "baseColorTexture" in pbr:
        kw["base_texture"] = _image(doc, binary, path, pbr["baseColorTexture"], f"{where}.baseColorTexture", "srgb")
    if "metallicRoughnessTexture" in pbr:
        kw["metallic_roughness_texture"] = _image(doc, binary, path, pbr["metallicRoughnessTexture"],
                                                  f"{where}.metallicRoughnessTexture", "linear")
    if "normalTexture" in mat:
        kw["normal_map"] = _image(doc, binary, path, mat["normalTexture"], f"{where}.normalTexture", "linear")
        kw["normal_scale"] = float(mat["normalTexture"].get("scale", 1.0))
        kw["normal_y_flip"] = True
    try:
        return Material.from_gltf(
            base_color_factor=pbr.get("baseColorFactor", (1.0, 1.0, 1.0, 1.0)),
            metallic_factor=pbr.get("metallicFactor", 1.0), roughness_factor=pbr.get("roughnessFactor", 1.0),
            sheen_color_factor=(sheen or {}).get("sheenColorFactor", (0.0, 0.0, 0.0)),
            sheen_roughness_factor=(sheen or {}).get("sheenRoughnessFactor", 0.0),
            name=name, **kw)
    except cs.InputError as e:
        raise cs.InputError(f"{path}: {where}: {e}") from None


def gltf_uv(uv_obj: np.ndarray) -> np.ndarray:
    """OBJ-convention UVs (v up, what trimesh and clothsim.exchange return) -> glTF's (v down)."""
    uv = np.array(uv_obj, dtype=np.float32, copy=True)
    uv[:, 1] = 1.0 - uv[:, 1]
    return uv
