"""The fused ∇k, ∇v kernel (``dkv_kernel``) against the two kernels it replaces and against the float64 oracle.

Against the pair (``dk_kernel``, ``dv_kernel``): the three kernels launched directly on the same adjoint states,
den and h, across β = 0 and β > 0, the normaliser on and off, φ in the kernel or not, leading padding, float32,
bfloat16 and float16, and head widths that take several column blocks. With one column block the fused kernel
sums the same products in the same order, so under Triton's interpreter its gradients are the pair's bit for bit;
with several, or compiled, within float32's rounding. Against the oracle
(:func:`lra_kit.attention.causal.naive.naive_causal_op`, float64): the whole op, which launches the fused kernel
when both gradients are asked for, with leading padding and a starting state.

The kernels run under Triton's interpreter on CPU tensors (``LRA_KIT_TRITON=interpret``), compiled on CUDA ones;
the shapes are small (N ≤ 40, D ≤ 16 unless a test says why) because the interpreter is slow.
"""
import importlib.util

import pytest
import torch

if importlib.util.find_spec("triton") is None:
    pytest.skip("Triton is not installed", allow_module_level=True)

from lra_kit.attention import get_feature_map
from lra_kit.attention.causal import CausalState, causal_op
from lra_kit.attention.causal.naive import naive_causal_op
from lra_kit.attention.causal.op import Spec
from lra_kit.attention.causal.triton import host

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
CHUNK = 16
LEAD = 6  # padded keys at the start of row 0 in the oracle's cases


@pytest.fixture(autouse=True)
def _triton_mode(monkeypatch):
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")


def _spec(beta, norm, phi):
    return Spec(get_feature_map("elu") if phi else None, beta, 0.8, 1e-6 if norm else None, CHUNK, False, False,
                True, torch.float32)


def _adjoint_case(dtype, beta, norm, phi, N=37, D=8, M=12, seed=0, lead=20):
    """A launch and what ∇k, ∇v read: raw q, k, v, ∂out, the adjoint states (from the reverse state pass, started
    from a final state's gradient), den and h; one row (the interpreter's time is per program), ``lead`` padded
    keys at its start, longer than a chunk. den is ε (1e-6) there, as the forward leaves it where only padded
    keys precede a query, so γ·g/den is ~1e6."""
    gen = torch.Generator().manual_seed(seed)
    B, H = 1, 1
    q, k = (torch.randn(B, H, N, D, generator=gen) for _ in range(2))
    v, g = (torch.randn(B, H, N, M, generator=gen) for _ in range(2))
    if not phi:  # another feature map, applied before the kernels: positive features
        q, k = q.exp(), k.exp()
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[0, :lead] = True
    q, k, v, g = (t.to(DEVICE, dtype) for t in (q, k, v, g))
    run = host._Launch(q, v, _spec(beta, norm, phi), phi, mask.to(DEVICE))
    den = h = None
    if norm:
        den = (torch.rand(B * H, N, generator=gen) + 0.5).to(DEVICE)
        den[0, :lead] = 1e-6
        h = torch.randn(B * H, N, generator=gen).to(DEVICE)
    final = [torch.randn(B, H, D, M, generator=gen), torch.randn(B, H, D, M, generator=gen),
             torch.randn(B, H, D, generator=gen)]
    start = run.edge(D, M, DEVICE, [t.to(DEVICE) for t in final])
    adjoint, _ = run.states(q, g, reverse=True, init=start, store_last=False, den=den, h=h)
    return run, (q, k, v, g), adjoint, den, h


def _pair_and_fused(run, inputs, adjoint, den, h):
    q, k, v, g = inputs
    pair = torch.empty_like(k), torch.empty_like(v)
    fused = torch.empty_like(k), torch.empty_like(v)
    run.dk(q, k, v, g, adjoint, den, h, pair[0])
    run.dv(q, k, g, adjoint, den, pair[1])
    run.dkv(q, k, v, g, adjoint, den, h, *fused)
    return pair, fused


def _same(fused, pair, exact=True):
    """Bit for bit (``exact``, interpreted), else within float32's rounding of the largest entry (compiled: the
    same sums, which the compiler may contract differently; several column blocks: summed from another block)."""
    for name, a, b in zip(("dk", "dv"), fused, pair, strict=True):
        assert torch.isfinite(b).all(), name
        if exact and not a.is_cuda:
            assert torch.equal(a, b), f"{name}: max |fused − pair| = {(a.float() - b.float()).abs().max():.3g}"
        else:
            scale = b.float().abs().max()
            torch.testing.assert_close(a.float(), b.float(), rtol=1e-2, atol=1e-5 * scale, msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("beta", [0.0, 0.7])
@pytest.mark.parametrize("norm", [True, False], ids=["norm", "bare"])
@pytest.mark.parametrize("phi", [True, False], ids=["phi", "mapped"])
def test_fused_kernel_equals_the_pair(dtype, beta, norm, phi):
    pair, fused = _pair_and_fused(*_adjoint_case(dtype, beta, norm, phi))
    _same(fused, pair)


@pytest.mark.parametrize("D, M, cap", [(40, 24, 16), (8, 40, 16), (8, 24, 32)])
def test_fused_kernel_walks_every_column_block(monkeypatch, D, M, cap):
    """Several column blocks (16 wide: the cap lowered so that the widths stay small): a program walks every block
    after its own, modulo their count, and one with columns of only one gradient walks nothing it does not need.
    And float32's square tiles (host.dkv_blocks): 32 × 32 where the pair takes 16 × 32."""
    monkeypatch.setitem(host.TILING, torch.float32, host.Tiling(CHUNK, cap, 16, 8))
    run, inputs, adjoint, den, h = _adjoint_case(torch.float32, 0.7, True, True, N=20, D=D, M=M, seed=1, lead=3)
    assert (run.BD, run.BM) == ((16, 16) if cap == 16 else (16, 32))
    pair, fused = _pair_and_fused(run, inputs, adjoint, den, h)
    _same(fused, pair, exact=False)


def _oracle_case(dtype, seed=0, B=2, H=1, N=40, D=8, M=6):
    gen = torch.Generator().manual_seed(seed)
    q, k, v, g = (torch.randn(B, H, N, d, generator=gen, dtype=torch.float64) for d in (D, D, M, M))
    q, k, v = (t.to(dtype).double() for t in (q, k, v))  # the oracle sees the inputs as ``dtype`` rounds them
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[0, :LEAD] = True
    start = CausalState(torch.randn(B, H, D, M, generator=gen, dtype=torch.float64),
                        torch.randn(B, H, D, M, generator=gen, dtype=torch.float64),
                        torch.rand(B, H, D, generator=gen, dtype=torch.float64) + 1)
    return q, k, v, g, mask, CausalState(*(t.to(dtype).double() for t in start))


def _gradients(op, dtype, case, feature_map, beta, eps):
    q, k, v, g, mask, start = case
    leaves = [t.to(DEVICE if dtype != torch.float64 else "cpu", dtype).requires_grad_() for t in (q, k, v)]
    state = CausalState(start.s.to(leaves[0]), start.d.to(leaves[0]), start.z.to(leaves[0]) if eps else None)
    out, _ = op(*leaves, phi=feature_map, beta=beta, gamma=0.8, eps=eps, key_padding_mask=mask.to(leaves[0].device),
                initial_state=state)
    return torch.autograd.grad((out * g.to(out)).sum(), leaves)


def _rel_rms(a, b):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return ((a - b).norm() / b.norm()).item()


# (feature map, eps, β): elu + 1 in the kernels with the normaliser; another map (softplus, applied in PyTorch) with
# it; no map and no normaliser (the bare product). tests/test_causal_oracle.py checks linear, momentum and the bare
# product with elu + 1 the same way, through the fused kernel too.
ORACLE_CASES = {"linear": ("elu", 1e-6, 0.0), "softplus momentum": ("softplus", 1e-6, 0.7),
                "bare momentum": (None, None, 0.7)}


@pytest.mark.parametrize("case", ORACLE_CASES)
def test_op_launches_the_fused_kernel_and_equals_the_oracle(record_triton_launches, case):
    """float32, leading padding and a starting state: one ∇k, ∇v launch, and the oracle's gradients."""
    name, eps, beta = ORACLE_CASES[case]
    feature_map = get_feature_map(name) if name else None
    inputs = _oracle_case(torch.float32, seed=2)
    want = _gradients(naive_causal_op, torch.float64, inputs, feature_map, beta, eps)
    launched = record_triton_launches()

    def kernels(*a, **kw):
        return causal_op(*a, chunk_size=CHUNK, triton=True, **kw)

    got = _gradients(kernels, torch.float32, inputs, feature_map, beta, eps)
    assert launched.count("dkv_kernel") == 1 and "dk_kernel" not in launched and "dv_kernel" not in launched
    for grad, a, b in zip("qkv", got, want, strict=True):
        torch.testing.assert_close(a.double().cpu(), b, rtol=1e-4, atol=1e-4, msg=f"∇{grad}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_sixteen_bit_gradients_through_the_fused_kernel_equal_the_oracle(dtype):
    """Momentum, elu + 1, leading padding, a starting state: ∇k and ∇v within 1e-2 (relative RMS) of the float64
    oracle on the rounded inputs, as tests/test_triton_causal_product.py asks of 16-bit inputs."""
    phi = get_feature_map("elu")
    inputs = _oracle_case(dtype, seed=3)
    want = _gradients(naive_causal_op, torch.float64, inputs, phi, 0.7, 1e-6)

    def kernels(*a, **kw):
        return causal_op(*a, chunk_size=CHUNK, triton=True, **kw)

    got = _gradients(kernels, dtype, inputs, phi, 0.7, 1e-6)
    for grad, a, b in zip("qkv", got, want, strict=True):
        assert a.dtype == dtype and _rel_rms(a, b) < 1e-2, grad


def test_one_gradient_alone_takes_its_own_kernel(record_triton_launches):
    """With k frozen only ∇v is asked for: the ∇v kernel runs (it reads neither v nor ∂out in full), and its ∇v
    is the fused launch's."""
    case = _oracle_case(torch.float32, seed=4, N=24)
    phi = get_feature_map("elu")
    q, k, v, g, mask, _ = case
    grads = {}
    for frozen in (False, True):
        launched = record_triton_launches()
        leaves = [t.float().requires_grad_(not (frozen and i == 1)) for i, t in enumerate((q, k, v))]
        out, _ = causal_op(*leaves, phi=phi, beta=0.7, gamma=0.8, eps=1e-6, key_padding_mask=mask,
                           chunk_size=CHUNK, triton=True)
        asked = [t for t in leaves if t.requires_grad]
        grads[frozen] = torch.autograd.grad((out * g.float()).sum(), asked)[-1]
        assert ("dv_kernel" in launched) == frozen and ("dkv_kernel" in launched) != frozen
    assert torch.equal(grads[True], grads[False])
