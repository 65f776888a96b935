"""Materials: glTF 2.0 metallic-roughness with the KHR_materials_sheen lobe. Plain data, no GL.

Colours are given as sRGB (what a colour picker or a glTF ``baseColorFactor`` shown to a user
means) and converted to linear for shading. Texture files are read by the Renderer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import clothsim as cs

TEXTURE_SLOTS = ("base_texture", "normal_map", "metallic_roughness_texture")

NAMED_COLOURS = {
    "white": "#f2f0eb", "ivory": "#ebe3d0", "black": "#1c1c1e", "navy": "#1f2d4d", "red": "#a3202a",
    "burgundy": "#5e1a2b", "forest": "#2c4a35", "olive": "#6b6a3a", "sand": "#c9b48f", "grey": "#8a8d91",
    "charcoal": "#3a3c40", "sky": "#8fb4d9", "denim": "#3b5573", "mustard": "#c99a2e", "rose": "#d69aa0",
}


def parse_colour(value) -> tuple[float, float, float]:
    """sRGB colour in [0, 1]^3 from ``"#rrggbb"``, a name in NAMED_COLOURS or 3 numbers in [0, 1]."""
    if isinstance(value, str):
        s = NAMED_COLOURS.get(value.strip().lower(), value.strip())
        if s.startswith("#") and len(s) == 7:
            try:
                return tuple(int(s[i:i + 2], 16) / 255.0 for i in (1, 3, 5))
            except ValueError:
                pass
        raise cs.InputError(f"colour {value!r}: expected '#rrggbb' or one of {', '.join(NAMED_COLOURS)}")
    c = tuple(float(x) for x in value)
    if len(c) != 3 or not all(0.0 <= x <= 1.0 for x in c):
        raise cs.InputError(f"colour {value!r}: expected 3 sRGB numbers in [0, 1]")
    return c


def srgb_to_linear(c) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


@dataclass(frozen=True)
class EmbeddedImage:
    """An encoded image (PNG/JPEG bytes) held in memory, e.g. one embedded in a GLB file.

    ``source`` is the file it came from and ``key`` names it there (both for messages and the
    Renderer's texture cache, with the bytes' hash)."""

    source: str
    key: str
    data: bytes = field(repr=False)

    def __str__(self) -> str:
        return f"{self.source}#{self.key}"


@dataclass(frozen=True)
class Material:
    """A glTF metallic-roughness material with KHR_materials_sheen.

    Attributes:
        base_color: sRGB (3,) in [0, 1] (glTF's baseColorFactor is linear; use :meth:`from_gltf`).
        metallic, roughness: glTF factors in [0, 1] (roughness is perceptual; alpha = roughness^2).
        sheen_color: sRGB (3,) sheenColorFactor; (0, 0, 0) turns the lobe off.
        sheen_roughness: sheenRoughnessFactor in [0, 1].
        base_texture: sRGB image (a file or an :class:`EmbeddedImage`) multiplied with base_color, or None.
        normal_map: tangent-space normal map (OpenGL +Y convention), or None.
        normal_scale: glTF normalTexture.scale.
        metallic_roughness_texture: glTF metallicRoughnessTexture (linear; G scales roughness, B
            metallic), or None.
        normal_y_flip: the normal map's green points against the UVs' v (glTF: v runs down the
            image, green up); set by glTF materials.
        uv_scale: texture repeats per metre of UV (cloth UVs are rest-shape metres), (2,).
        visible: False hides the mesh in the colour pass but keeps it in shadows and framing
            ("ghost mannequin": the avatar shapes the garment and the floor shadow, unseen).
    """

    base_color: tuple[float, float, float] = (0.8, 0.8, 0.8)
    metallic: float = 0.0
    roughness: float = 0.85
    sheen_color: tuple[float, float, float] = (0.0, 0.0, 0.0)
    sheen_roughness: float = 0.5
    base_texture: Path | None = None
    normal_map: Path | None = None
    normal_scale: float = 1.0
    uv_scale: tuple[float, float] = (1.0, 1.0)
    metallic_roughness_texture: Path | EmbeddedImage | None = None
    normal_y_flip: bool = False
    visible: bool = True
    name: str = "material"

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_color", parse_colour(self.base_color))
        object.__setattr__(self, "sheen_color", parse_colour(self.sheen_color))
        for key in ("metallic", "roughness", "sheen_roughness"):
            v = getattr(self, key)
            if not (math.isfinite(v) and 0.0 <= v <= 1.0):
                raise cs.InputError(f"material {self.name!r}: {key} must lie in [0, 1], got {v!r}")
        for key in TEXTURE_SLOTS:
            v = getattr(self, key)
            if v is not None and not isinstance(v, EmbeddedImage):
                object.__setattr__(self, key, Path(v))

    @property
    def textured(self) -> bool:
        return any(getattr(self, k) is not None for k in TEXTURE_SLOTS)

    def replace(self, **changes) -> "Material":
        return replace(self, **changes)

    def check_files(self) -> None:
        """Raise InputError naming any texture file that does not exist."""
        for key in TEXTURE_SLOTS:
            path = getattr(self, key)
            if path is not None and not isinstance(path, EmbeddedImage) and not path.is_file():
                raise cs.InputError(f"material {self.name!r}: {key} file not found: {path}")

    @classmethod
    def fabric(cls, colour="#8a8d91", *, sheen: float = 0.6, roughness: float = 0.85, **kw) -> "Material":
        """A woven/knit fabric: rough dielectric base + a sheen lobe tinted towards the colour.

        ``sheen`` scales a sheen colour that is the base colour lifted towards white (fibres
        scatter a desaturated version of their dye at grazing angles).
        """
        base = np.asarray(parse_colour(colour))
        sheen_col = np.clip(sheen * (0.55 * base + 0.45), 0.0, 1.0)
        return cls(base_color=tuple(base), roughness=roughness, sheen_color=tuple(sheen_col),
                   sheen_roughness=kw.pop("sheen_roughness", 0.45), name=kw.pop("name", "fabric"), **kw)

    @classmethod
    def skin(cls, tone="#c8a08a", **kw) -> "Material":
        """A matte mannequin / skin-tone material (rough dielectric, faint sheen as peach fuzz)."""
        return cls(base_color=parse_colour(tone), roughness=0.55, sheen_color=(0.12, 0.1, 0.09),
                   sheen_roughness=0.3, name=kw.pop("name", "skin"), **kw)

    @classmethod
    def hidden(cls) -> "Material":
        """An invisible avatar: casts shadows and frames the shot, is not drawn (ghost mannequin)."""
        return cls(visible=False, name="hidden")

    @classmethod
    def from_gltf(cls, base_color_factor=(1, 1, 1, 1), metallic_factor=1.0, roughness_factor=1.0,
                  sheen_color_factor=(0, 0, 0), sheen_roughness_factor=0.0, **kw) -> "Material":
        """From glTF factors, which are linear: converted to sRGB for storage."""
        def lin_to_srgb(c):
            c = np.clip(np.asarray(c, dtype=np.float64)[:3], 0.0, 1.0)
            return tuple(np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055))
        return cls(base_color=lin_to_srgb(base_color_factor), metallic=float(metallic_factor),
                   roughness=float(roughness_factor), sheen_color=lin_to_srgb(sheen_color_factor),
                   sheen_roughness=float(sheen_roughness_factor), **kw)


@dataclass(frozen=True)
class MeshItem:
    """A triangle mesh to draw: plain arrays, no GL handles.

    Attributes:
        vertices: positions [m], (N, 3) float32, world space, Y up.
        triangles: (M, 3) int32, counter-clockwise seen from the front.
        material: how it looks.
        uvs: texture coordinates, (N, 2) float32 (cloth: rest-shape metres), or None.
        name: label.
    """

    vertices: np.ndarray
    triangles: np.ndarray
    material: Material = Material()
    uvs: np.ndarray | None = None
    name: str = "mesh"

    def __post_init__(self) -> None:
        v = np.ascontiguousarray(self.vertices, dtype=np.float32)
        t = np.ascontiguousarray(self.triangles, dtype=np.int32)
        if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
            raise cs.InputError(f"mesh {self.name!r}: vertices must have shape (N, 3) with N > 0, got {v.shape}")
        if t.ndim != 2 or t.shape[1] != 3 or len(t) == 0:
            raise cs.InputError(f"mesh {self.name!r}: triangles must have shape (M, 3) with M > 0, got {t.shape}")
        if t.min() < 0 or t.max() >= len(v):
            raise cs.InputError(f"mesh {self.name!r}: triangle indices must lie in [0, {len(v)}), got [{t.min()}, {t.max()}]")
        if not np.isfinite(v).all():
            raise cs.InputError(f"mesh {self.name!r}: vertices contain non-finite values")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "triangles", t)
        if self.uvs is not None:
            uv = np.ascontiguousarray(self.uvs, dtype=np.float32)
            if uv.shape != (len(v), 2):
                raise cs.InputError(f"mesh {self.name!r}: uvs must have shape ({len(v)}, 2), got {uv.shape}")
            object.__setattr__(self, "uvs", uv)

    def with_material(self, material: Material) -> "MeshItem":
        return replace(self, material=material)

    def with_vertices(self, vertices) -> "MeshItem":
        return replace(self, vertices=vertices)
