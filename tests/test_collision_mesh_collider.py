"""MeshCollider + ClothColliderContacts.

References: trimesh.triangles.closest_point against every face (float64) for closest points and
distances on an icosphere; the sign from the exact geometry (the icosphere is convex: inside iff
behind every face plane); brute-force float64 segment distances for the edge lists; the rigid translation
for the collider point displacement. Tolerances: 1e-5 m (float32 at 0.2 m scale).
"""

import numpy as np
import pytest
import trimesh
import warp as wp

from clothsim.collision._arrays import unique_edges
from clothsim.collision.mesh_collider import ClothColliderContacts, MeshCollider
from clothsim.solver.contact_blocks import edge_pair_plane

R = 0.03


@pytest.fixture(scope="module")
def sphere():
    return trimesh.creation.icosphere(subdivisions=3, radius=0.2)


def sample_points(rng, n):
    """Points at radii 0 .. 0.3 around the origin: inside deep, inside shallow, near outside, far."""
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    rad = np.concatenate([rng.uniform(0.0, 0.15, n // 4), rng.uniform(0.17, 0.2, n // 4),
                          rng.uniform(0.2, 0.23, n // 4), rng.uniform(0.23, 0.3, n - 3 * (n // 4))])
    return (d * rad[:, None]).astype(np.float32)


def closest_point_brute_force(mesh, pts):
    """trimesh.triangles.closest_point against every face; the nearest per point (float64)."""
    tri = mesh.triangles
    best = np.zeros_like(pts)
    dist = np.full(len(pts), np.inf)
    for i, p in enumerate(pts):
        q = trimesh.triangles.closest_point(tri, np.repeat(p[None], len(tri), 0))
        d = np.linalg.norm(q - p, axis=1)
        k = d.argmin()
        best[i], dist[i] = q[k], d[k]
    return best, dist


def test_vertex_contacts_match_trimesh(sphere, device):
    rng = np.random.default_rng(0)
    pts = sample_points(rng, 400)
    col = MeshCollider(sphere.vertices, sphere.faces, device=device)
    con = ClothColliderContacts(col, len(pts), np.zeros((0, 2), np.int32), device=device)
    con.detect(wp.array(pts, dtype=wp.vec3, device=device), R)
    face = con.vertex_face.numpy()
    dist = con.vertex_dist.numpy()
    normal = con.vertex_normal.numpy()
    point = con.vertex_point.numpy()
    bary = con.vertex_bary.numpy()

    ref_pt, ref_d = closest_point_brute_force(sphere, pts.astype(np.float64))
    # the icosphere is convex: inside iff behind every face plane
    inside = (np.einsum("fj,pfj->pf", sphere.face_normals, pts[:, None, :] - sphere.triangles[None, :, 0]) < 0).all(1)
    ref_sd = np.where(inside, -ref_d, ref_d)
    expect = ref_sd < R
    amb = np.abs(ref_sd - R) < 1e-5
    assert expect.sum() > 250 and (~expect).sum() > 50
    np.testing.assert_array_equal((face >= 0)[~amb], expect[~amb])
    c = (face >= 0) & expect
    np.testing.assert_allclose(point[c], ref_pt[c], atol=1e-5)
    np.testing.assert_allclose(dist[c], ref_sd[c], atol=1e-5)
    assert (dist[~expect & ~amb] == R).all()
    # closest point = barycentric combination on the reported face
    f = sphere.faces[face[c]]
    np.testing.assert_allclose(np.einsum("ni,nij->nj", bary[c], sphere.vertices[f]), point[c], atol=1e-5)
    # normals: unit, outward; outside they point from the surface to the vertex, inside they are the face normal
    np.testing.assert_allclose(np.linalg.norm(normal[c], axis=1), 1.0, atol=1e-5)
    out = c & ~inside & (ref_d > 1e-4)
    np.testing.assert_allclose(normal[out], (pts[out] - ref_pt[out]) / ref_d[out, None], atol=1e-4)
    ins = c & inside
    np.testing.assert_allclose(normal[ins], sphere.face_normals[face[ins]], atol=1e-5)
    # deep points (centre region) are found although deeper than R
    deep = inside & (ref_d > R)
    assert deep.sum() > 50 and (face[deep] >= 0).all()


def test_thickness_offset_and_moving_collider(sphere, device):
    pts = np.array([[0.0, 0.0, 0.215], [0.0, 0.0, 0.26]], dtype=np.float32)
    col = MeshCollider(sphere.vertices, sphere.faces, device=device, thickness_offset=0.01)
    con = ClothColliderContacts(col, 2, np.zeros((0, 2), np.int32), device=device)
    shift = np.array([0.0, 0.0, 0.004], dtype=np.float32)
    col.update_vertices(wp.array((sphere.vertices + shift).astype(np.float32), dtype=wp.vec3, device=device))
    con.detect(wp.array(pts, dtype=wp.vec3, device=device), R)
    # (0,0,0.2) is an icosphere vertex: the surface top is at 0.204 after the shift; offset surface at 0.214
    np.testing.assert_allclose(con.vertex_dist.numpy()[0], 0.215 - 0.204 - 0.01, atol=1e-6)
    assert con.vertex_face.numpy()[1] == -1  # 0.046 from the offset surface > R
    np.testing.assert_allclose(con.vertex_disp.numpy()[0], shift, atol=1e-7)
    np.testing.assert_allclose(con.vertex_normal.numpy()[0], [0, 0, 1], atol=1e-6)
    col.reset_vertices(sphere.vertices)
    con.detect(wp.array(pts, dtype=wp.vec3, device=device), R)
    np.testing.assert_allclose(con.vertex_disp.numpy()[0], 0.0, atol=1e-7)


def seg_dist(P0, P1, Q0, Q1):
    """Vectorized float64 segment-segment distance (Ericson 5.1.9)."""
    d1, d2, r = P1 - P0, Q1 - Q0, P0 - Q0
    a = (d1 * d1).sum(-1)
    e = (d2 * d2).sum(-1)
    f = (d2 * r).sum(-1)
    c = (d1 * r).sum(-1)
    b = (d1 * d2).sum(-1)
    den = a * e - b * b
    s = np.where(den > 1e-12 * a * e, np.clip((b * f - c * e) / np.where(den > 0, den, 1), 0, 1), 0.0)
    t = (b * s + f) / e
    s = np.where(t < 0, np.clip(-c / a, 0, 1), np.where(t > 1, np.clip((b - c) / a, 0, 1), s))
    t = np.clip(t, 0, 1)
    return np.linalg.norm(P0 + s[:, None] * d1 - Q0 - t[:, None] * d2, axis=1)


def cloth_over_box():
    """A 9×9 cloth patch draped over the top edge of a 0.4 m box (cloth spans the edge at y = 0.2, z = 0.2)."""
    n = 9
    u, v = np.meshgrid(np.linspace(-0.3, 0.3, n), np.linspace(0.0, 0.3, n), indexing="ij")
    y = 0.21 + 0.0 * v
    z = 0.2 - 0.15 + v
    x = np.stack([u, y - 0.1 * np.clip(v - 0.15, 0, None), z], -1).reshape(-1, 3)
    tris = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1
            tris += [(a, b, c), (a, c, d)]
    tris = np.array(tris, dtype=np.int32)
    return x.astype(np.float32), tris, unique_edges(tris)


def test_grow_past_one_array(device, monkeypatch):
    """ClothColliderContacts.grow() when doubling would pass MAX_LIST_ENTRIES (lowered here): the largest
    capacity that fits when it holds the longest list, then no overflow; with one entry less a
    SimulationError that names the lists, the capacities unchanged."""
    import clothsim.collision.mesh_collider as MC
    from clothsim.errors import SimulationError

    box = trimesh.creation.box(extents=(0.4, 0.4, 0.4))
    x, tris, edges = cloth_over_box()
    col = MeshCollider(box.vertices, box.faces, device=device)
    pos = wp.array(x, dtype=wp.vec3, device=device)

    def overflowed():
        con = ClothColliderContacts(col, len(x), edges, triangles=tris, edge_capacity=1, triangle_capacity=1,
                                    device=device)
        con.detect(pos, R)
        assert con.overflowed()
        return con

    con = overflowed()
    need = con.required.numpy().astype(np.int64)
    counts = np.array([con.edge_count, con.triangle_count], np.int64)
    k = int(np.argmax(need * counts))
    assert need[k] > 1 and need[k] & (need[k] - 1), need  # doubling from 1 overshoots it
    limit = int((need * counts).max())
    monkeypatch.setattr(MC, "MAX_LIST_ENTRIES", limit)
    caps = con.grow()
    got = np.array([caps["ee"], caps["tv"]])
    assert got[k] == limit // counts[k] >= need[k] and (got >= need).all() and (got * counts <= limit).all()
    con.detect(pos, R)
    assert not con.overflowed()

    con = overflowed()
    monkeypatch.setattr(MC, "MAX_LIST_ENTRIES", limit - 1)
    before = (con.edge_capacity, con.triangle_capacity)
    with pytest.raises(SimulationError, match=f"collider contact .* lists: a list needs {need[k]} entries"):
        con.grow()
    assert (con.edge_capacity, con.triangle_capacity) == before


def test_edge_and_corner_lists_match_brute_force(device):
    box = trimesh.creation.box(extents=(0.4, 0.4, 0.4))
    x, tris, edges = cloth_over_box()
    col = MeshCollider(box.vertices, box.faces, device=device)
    con = ClothColliderContacts(col, len(x), edges, triangles=tris, edge_capacity=1, triangle_capacity=1, device=device)
    pos = wp.array(x, dtype=wp.vec3, device=device)
    con.detect(pos, R)
    assert con.overflowed()
    caps = con.grow()
    con.detect(pos, R)
    assert not con.overflowed(), caps

    ce = col.edges.numpy()
    cv = box.vertices
    ei, fi = np.meshgrid(np.arange(len(edges)), np.arange(len(ce)), indexing="ij")
    ei, fi = ei.ravel(), fi.ravel()
    xd = x.astype(np.float64)
    d = seg_dist(xd[edges[ei, 0]], xd[edges[ei, 1]], cv[ce[fi, 0]], cv[ce[fi, 1]])
    counts = con.ee_count.numpy()
    lists = con.ee_edge.numpy().reshape(len(edges), con.edge_capacity)
    assert (d < R).sum() > 10
    for e in range(len(edges)):
        got = set(lists[e, : counts[e]].tolist())
        assert set(fi[(ei == e) & (d < R - 1e-5)].tolist()) <= got <= set(fi[(ei == e) & (d < R + 1e-5)].tolist())
    # collider corners near cloth triangles
    ti, vi = np.meshgrid(np.arange(len(tris)), np.arange(len(cv)), indexing="ij")
    ti, vi = ti.ravel(), vi.ravel()
    dt = np.linalg.norm(trimesh.triangles.closest_point(xd[tris[ti]], cv[vi]) - cv[vi], axis=1)
    counts = con.tv_count.numpy()
    lists = con.tv_vertex.numpy().reshape(len(tris), con.triangle_capacity)
    assert (dt < R).sum() >= 2
    for t in range(len(tris)):
        got = set(lists[t, : counts[t]].tolist())
        assert set(vi[(ti == t) & (dt < R - 1e-5)].tolist()) <= got <= set(vi[(ti == t) & (dt < R + 1e-5)].tolist())
    con.release()
    col.release()
    col.release()


def _prism(radius=0.1, sides=12, half_length=0.2):
    """A closed regular prism along x whose top face is horizontal (normal +y); its side edges turn by
    360/sides degrees, so they are sharp edges that get collider edge-edge pairs."""
    a = np.deg2rad(180.0 / sides + np.arange(sides) * 360.0 / sides)  # corners at ±15° from +y for 12 sides
    ring = np.stack([radius * np.sin(a), radius * np.cos(a)], axis=1)  # (z, y)
    v = [(x, y, z) for x in (-half_length, half_length) for z, y in ring] + [(-half_length, 0, 0), (half_length, 0, 0)]
    f = []
    for k in range(sides):
        k1 = (k + 1) % sides
        f += [(k, k1, sides + k1), (k, sides + k1, sides + k)]
        f += [(2 * sides, k1, k), (2 * sides + 1, sides + k, sides + k1)]
    m = trimesh.Trimesh(np.array(v, dtype=float), np.array(f), process=False)
    m.fix_normals()
    assert m.is_watertight and m.volume > 0
    return m


def test_cloth_beside_a_ridge_feels_no_edge_contact(device):
    """A cloth lying still, without gravity, 2 mm clear of a prism's top face and 9-25 mm beside one of its
    30-degree side edges, should stay exactly where it is. Its edges along the ridge are parallel to it, so their
    closest points are interior (the middle of the overlap) and each is listed as an edge-edge pair, with the
    closest-point vector w pointing sideways: the pair's distance should be the edges' distance (|w| = 9 mm, clear),
    not w·n along the ridge's mean normal (−0.4 mm: 2 cos 15° − 9 sin 15°), which pushes the cloth off a face it does
    not touch (on the mannequin's arm a sleeve-hem vertex rang at 0.2 m/s this way, see drape_h200_s9.md)."""
    import clothsim as cs

    prism = _prism()
    top = 0.1 * np.cos(np.deg2rad(15.0))
    ridge_z = 0.1 * np.sin(np.deg2rad(15.0))
    cloth = cs.Cloth.grid(size=(0.1, 0.016), resolution=(11, 3), plane="xz",
                          center=(0.0, top + 0.002, ridge_z - 0.009 - 0.008))
    sim = cs.Simulator(cloth, device=device, gravity=(0.0, 0.0, 0.0), substeps=10, iterations=10)
    try:
        sim.add_collider(cs.Collider.mesh(prism.vertices, prism.faces))
        x0 = sim.positions().copy()
        sim.step(5)
        pairs = int(sim.solver.collider_contacts.ce_count.numpy().sum())
        moved = float(np.abs(sim.positions() - x0).max())
    finally:
        sim.release()
    assert moved < 1e-7, f"the cloth moved {moved * 1e3:.3f} mm"  # none of the ridge's pairs pushes ...
    assert pairs > 0  # ... though they are listed



@wp.kernel
def _edge_pair_push_kernel(w: wp.array(dtype=wp.vec3), nt: wp.vec4, r: float, out: wp.array(dtype=float)):
    i = wp.tid()
    n, fade = edge_pair_plane(w[i], nt, r)
    # the pair's penalty depth along its normal, as contact_plane sees it, times the force's weight
    out[i] = fade * wp.max(r - wp.dot(w[i], n), 0.0)


@pytest.mark.parametrize("t", [0.5, 2.0])
def test_edge_pair_force_is_continuous_where_the_plane_stops(device, t):
    """Inside a ridge's wedge (below both face planes) and within the cone under the edge (b < r - a), the
    collider edge pair pushes along the edge normal; elsewhere it is the two edges' distance |w| (a push of
    r - |w| where that is positive). The plane's push must fade out toward that boundary rather than stop
    there: with a hard cone edge two hem vertices of the 20 mm T-shirt popped by 0.5-0.75 mm (README,
    contacts). A point crosses the boundary at a fixed depth a = -2 mm in steps of 1 um: on a mild ridge
    (t = 0.5: the cone's edge at b = 5 mm comes first; |w| > r there, so the push is continuous all along) and
    a sharp one (t = 2: the face plane at b = 1 mm, continuous up to it; past it the edges' distance pushes
    from r - |w| = 0.76 mm on, a contact switching on at the body's surface). Reference: the push (r - a) times
    a smoothstep in s = max(b/(r - a), t·b/(-a)) changes per step by at most 3·(r - a)·ds; the hard cone
    jumped by r - a = 5 mm (t = 0.5) and 4.24 mm (t = 2)."""
    r, a = 0.003, -0.002                              # thickness, depth below the ridge
    db = 1e-6
    b = np.arange(0.0, 0.008, db)
    w = np.stack([b, np.full_like(b, a), np.zeros_like(b)], axis=1).astype(np.float32)
    out = wp.zeros(len(b), dtype=float, device=device)
    wp.launch(_edge_pair_push_kernel, len(b), inputs=[wp.array(w, dtype=wp.vec3, device=device),
                                                      wp.vec4(0.0, 1.0, 0.0, t), r], outputs=[out], device=device)
    push = out.numpy()
    assert push[0] == pytest.approx(r - a, rel=1e-5)          # on the cone's axis: the full plane depth
    edge = min(r - a, -a / t)                                  # where the plane stops applying
    inside = b < edge - 2 * db
    assert push[inside][-1] < 1e-5                             # faded out by the boundary
    beyond = b > edge + 2 * db                                 # beyond it: the edges' distance alone
    assert np.allclose(push[beyond], np.maximum(r - np.hypot(a, b[beyond]), 0.0), atol=1e-7)
    jumps = np.abs(np.diff(push[inside]))
    bound = 3.0 * (r - a) * max(1.0 / (r - a), t / -a) * db * 1.05
    print(f"\nt = {t}: largest change of the push between points 1 um apart {jumps.max():.2e} m (bound {bound:.2e})")
    assert jumps.max() < bound
    if t < 1.0:  # a mild ridge: across the cone's edge too
        assert np.abs(np.diff(push)).max() < bound
