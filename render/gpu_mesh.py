"""GL mirror of one MeshItem: its vertex/index buffers and VAOs (owned by the Renderer, keyed by mesh name)."""

from __future__ import annotations

import itertools

import numpy as np

from .gl import release_gl, upload_indices
from .material import MeshItem
from .settings import _bounds, mean_edge_length, vertex_normals

_VERSIONS = itertools.count(1)   # GL content versions, unique across meshes (shadow-map reuse keys)


class _GpuMesh:
    """GL buffers mirroring one MeshItem (positions, normals, uvs, indices) and its VAOs."""

    def __init__(self) -> None:
        self.vbo_pos = self.vbo_nrm = self.vbo_uv = self.ibo = None
        self.vertex_count = 0
        self.index_count = 0
        self.triangles_ref = None
        self.vertices_ref = None
        self.version = 0        # a new number whenever the GL positions or triangles change (map reuse)
        self.vaos: dict[tuple, object] = {}
        self.bounds: tuple[np.ndarray, np.ndarray] | None = None
        self.mean_edge: float | None = None   # [m], estimated on each CPU upload; None: unknown (device positions)

    def release(self) -> None:
        release_gl(self, self.vaos, ("vbo_pos", "vbo_nrm", "vbo_uv", "ibo"))

    def nbytes(self) -> int:
        """Bytes of its GL buffers."""
        total = 0
        for name in ("vbo_pos", "vbo_nrm", "vbo_uv", "ibo"):
            buf = getattr(self, name)
            if buf is not None:
                total += buf.size
        return total

    def update(self, ctx, item: MeshItem, upload: bool = True) -> None:
        """Mirror ``item``: (re)allocate for its vertex count, upload triangles and (``upload``: the CPU
        path) positions, normals, bounds and mean edge when they are new array objects, and its uvs."""
        n = len(item.vertices)
        if self.vertex_count != n or self.vbo_pos is None:
            self.release()
            self.vbo_pos = ctx.buffer(reserve=n * 12, dynamic=True)
            self.vbo_nrm = ctx.buffer(reserve=n * 12, dynamic=True)
            self.vertex_count = n
            self.triangles_ref = self.vertices_ref = None
        if self.triangles_ref is not item.triangles:
            upload_indices(ctx, self, item.triangles)
            self.version = next(_VERSIONS)
        if upload and self.vertices_ref is not item.vertices:
            # CPU path: a plain upload of positions and normals (the GPU path is render.interop)
            self.vbo_pos.write(item.vertices.tobytes())
            self.vbo_nrm.write(vertex_normals(item.vertices, item.triangles).tobytes())
            self.vertices_ref = item.vertices
            self.version = next(_VERSIONS)
            self.bounds = _bounds(item.vertices)
            self.mean_edge = mean_edge_length(item.vertices, item.triangles)
        has_uv = item.uvs is not None
        if has_uv and (self.vbo_uv is None or self.vbo_uv.size != n * 8):
            if self.vbo_uv is not None:
                self.vbo_uv.release()
            self.vbo_uv = ctx.buffer(item.uvs.tobytes())
            for vao in self.vaos.values():
                vao.release()
            self.vaos.clear()
        elif has_uv:
            self.vbo_uv.write(item.uvs.tobytes())

    def vao(self, ctx, program, with_uv: bool, depth_only: bool):
        """The VAO of this mesh for ``program`` (made once per program and uv use)."""
        key = (id(program), with_uv)
        vao = self.vaos.get(key)
        if vao is None:
            content = [(self.vbo_pos, "3f", "in_position")]
            if not depth_only:
                content.append((self.vbo_nrm, "3f", "in_normal"))
                if with_uv:
                    content.append((self.vbo_uv, "2f", "in_uv"))
            vao = ctx.vertex_array(program, content, index_buffer=self.ibo, index_element_size=4)
            self.vaos[key] = vao
        return vao
