import pytest
import torch

from fedlib.fl import (
    Algorithm,
    CentralGaussian,
    ClientMessage,
    ClipPerLayer,
    ClipUpdate,
    FLConfig,
    GaussianNoise,
    LocalSGD,
    LocalTrainer,
    MedianClip,
    RoundContext,
    ServerOptimizer,
    TopK,
    evaluate,
    get_flat,
    run_federated,
)
from fedlib.checkpoint import CheckpointMismatch
from fedlib.fl.client import evaluate_per_sample
from fedlib.fl.engine import RunSummary
from fedlib.privacy import PrivacyBudget
from fedlib.rng import make_generator

from helpers import cfg, mlp
from reference import seed_style_fedavg


def run(small_fed, config, algorithm=None, **kw):
    train, clients, test = small_fed
    return run_federated(mlp(), train, clients, test, config, algorithm, **kw)


def test_matches_the_seed_style_reference(small_fed):
    train, clients, _ = small_fed
    ours = run(small_fed, cfg()).params
    ref = seed_style_fedavg(mlp(), train, clients, rounds=3, clients_per_round=4, epochs=1, batch_size=16,
                            lr=0.1, seed=0)
    assert torch.allclose(ours, ref, atol=1e-6)


def test_sigma_zero_and_no_sparsification_is_fedavg(small_fed):
    plain = run(small_fed, cfg()).params
    wrapped = run(small_fed, cfg(), Algorithm(transforms=[ClipUpdate(1e6), TopK(1.0), GaussianNoise(0.0)])).params
    assert torch.equal(plain, wrapped)
    uniform = run(small_fed, cfg(weighting="uniform")).params
    central = run(small_fed, cfg(weighting="uniform"), Algorithm(aggregator=CentralGaussian(0.0, bound=1e6))).params
    assert torch.allclose(uniform, central, atol=1e-6)


def test_same_seed_same_numbers_other_seed_other_numbers(small_fed):
    dp = lambda: Algorithm(transforms=[MedianClip(), GaussianNoise(0.5)])  # noqa: E731
    a, b = run(small_fed, cfg(), dp()), run(small_fed, cfg(), dp())
    c = run(small_fed, cfg(seed=1), dp())
    assert torch.equal(a.params, b.params) and a.metrics == b.metrics
    assert not torch.equal(a.params, c.params)


def stateful_algorithm():
    return Algorithm(transforms=[MedianClip(per_layer=True), GaussianNoise(0.3)],
                     aggregator=CentralGaussian(0.2, bound="median"), server=ServerOptimizer(momentum=0.5))


def test_resume_after_a_kill_gives_identical_numbers(small_fed, tmp_path):
    config = cfg(rounds=5, local=LocalSGD(epochs=1, batch_size=16, momentum=0.9))
    whole = run(small_fed, config, stateful_algorithm())

    def killer(t, row):
        if t == 3:
            raise KeyboardInterrupt

    ckpt = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        run(small_fed, config, stateful_algorithm(), checkpoint=ckpt, callback=killer)
    assert torch.load(ckpt, weights_only=True)["state"]["round"] == 3
    resumed = run(small_fed, config, stateful_algorithm(), checkpoint=ckpt)
    assert torch.equal(whole.params, resumed.params)
    assert whole.metrics == resumed.metrics
    assert torch.equal(whole.correct, resumed.correct) and torch.equal(whole.correct_best, resumed.correct_best)
    with pytest.raises(CheckpointMismatch, match=r"written for another run \(config.local.momentum: 0.9 != 0.0\)"):
        run(small_fed, cfg(rounds=6), stateful_algorithm(), checkpoint=ckpt)


def test_history_records_models_and_uploads(small_fed):
    out = run(small_fed, cfg(weighting="uniform"), history="updates")
    h = out.history
    assert len(h.models) == 4 and len(h.participants) == 3 and torch.equal(h.models[-1], out.params)
    for t in range(3):
        assert set(h.updates[t]) == set(h.participants[t])
        mean = torch.stack(list(h.updates[t].values())).mean(0)
        assert torch.allclose(h.models[t + 1], h.models[t] - mean, atol=1e-6)  # thesis §2.1.2 Step 3


def test_budget_stops_training_before_overspending(small_fed):
    budget = PrivacyBudget(3.0, 1e-5)  # sigma 2, q = 4/12: 9 rounds give eps 2.9, 10 rounds 3.0
    out = run(small_fed, cfg(rounds=50, weighting="uniform"),
              Algorithm(aggregator=CentralGaussian(2.0, bound=1.0, budget=budget)))
    assert 0 < out.rounds_completed < 50
    assert out.metrics[-1]["epsilon_cdp"] <= 3.0


def context(slices, seed=0):
    return RoundContext(0, 10, 10, tuple(range(10)), slices, seed)


def test_local_noise_std_is_sigma_times_bound():
    d = 200_000
    msg = ClientMessage(0, 600, torch.full((d,), 1.0))
    ctx = context([slice(0, d)])
    ClipUpdate(2.0)(msg, ctx)
    clipped = msg.update.clone()
    GaussianNoise(1.5)(msg, ctx)
    assert float((msg.update - clipped).std()) == pytest.approx(3.0, rel=0.01)
    per_sample = ClientMessage(0, 600, torch.full((d,), 1.0))
    ClipUpdate(2.0)(per_sample, ctx)
    GaussianNoise(1.5, per_sample=True)(per_sample, ctx)  # thesis eq. 3.9: S_i = C_i / n_i
    assert float((per_sample.update - clipped).std()) == pytest.approx(3.0 / 600, rel=0.01)


def test_per_layer_noise_follows_each_layer_bound():
    slices = [slice(0, 100_000), slice(100_000, 200_000)]
    msg = ClientMessage(0, 1, torch.zeros(200_000))
    ClipPerLayer([1.0, 4.0])(msg, context(slices))
    GaussianNoise(1.0)(msg, context(slices))
    assert float(msg.update[slices[0]].std()) == pytest.approx(1.0, rel=0.02)
    assert float(msg.update[slices[1]].std()) == pytest.approx(4.0, rel=0.02)


def test_noise_only_on_kept_entries():
    msg = ClientMessage(0, 1, torch.arange(100.0))
    ctx = context([slice(0, 100)])
    for t in (TopK(0.1), ClipUpdate(1e9), GaussianNoise(1.0, support="kept")):
        t(msg, ctx)
    assert torch.count_nonzero(msg.update) == 10 and torch.all(msg.update[:90] == 0)


def test_central_noise_std_is_sigma_s_over_m():
    agg = CentralGaussian(2.0, bound=3.0)
    out = agg(torch.zeros(10, 200_000), torch.full((10,), 0.1), context([slice(0, 200_000)]))
    assert float(out.std()) == pytest.approx(2.0 * 3.0 / 10, rel=0.01)
    assert agg.metrics()["epsilon_cdp"] > 0


def test_server_momentum_eq_3_6():
    server = ServerOptimizer(lr=1.0, momentum=0.5)
    w = torch.zeros(2)
    w = server.step(w, torch.tensor([2.0, 0.0]))  # V = 0.5*0 + 0.5*g = [1, 0]
    assert torch.equal(w, torch.tensor([-1.0, 0.0]))
    w = server.step(w, torch.tensor([0.0, 2.0]))  # V = [0.5, 1]
    assert torch.equal(w, torch.tensor([-1.5, -1.0]))
    hb = ServerOptimizer(lr=1.0, momentum=0.5, style="heavy_ball")
    assert torch.equal(hb.step(torch.zeros(1), torch.ones(1)), -torch.ones(1))


def test_local_momentum_is_the_thesis_mgd_average(small_fed):
    train, clients, _ = small_fed
    model = mlp()
    start = get_flat(model)
    opt = LocalSGD(epochs=1, batch_size=40, momentum=0.5, dampening=0.5)  # one batch per epoch: one step
    update, _ = LocalTrainer(model).train(start, train.x, train.y, clients[0], lr=0.2, opt=opt,
                                          generator=make_generator(0, "x"))
    plain, _ = LocalTrainer(mlp()).train(start, train.x, train.y, clients[0], lr=0.2,
                                         opt=LocalSGD(epochs=1, batch_size=40), generator=make_generator(0, "x"))
    assert torch.allclose(update, 0.5 * plain, atol=1e-7)  # v1 = (1 - beta) g with v0 = 0


def test_thesis_learning_rate_schedule():
    c = cfg(lr=0.1, lr_decay=0.96, lr_decay_rounds=20)
    assert c.lr_at(0) == 0.1 and c.lr_at(5) == pytest.approx(0.1 * 0.96**5)
    assert c.lr_at(25) == c.lr_at(20) == pytest.approx(0.0442, abs=1e-4)


@pytest.mark.parametrize("call,match", [
    (lambda: FLConfig(rounds=0, clients_per_round=1), "rounds"),
    (lambda: FLConfig(rounds=1, clients_per_round=1, lr=-1), "lr"),
    (lambda: FLConfig(rounds=1, clients_per_round=1, weighting="size"), "weighting"),
    (lambda: LocalSGD(batch_size=0), "batch_size"),
    (lambda: LocalSGD(momentum=1.0), "momentum"),
    (lambda: ServerOptimizer(momentum=1.0), "momentum"),
    (lambda: TopK(2.0), "rate"),
    (lambda: CentralGaussian(1.0, bound="max"), "bound"),
    (lambda: GaussianNoise(-1.0), "noise_multiplier"),
])
def test_bad_configuration_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_runs_are_refused(small_fed):
    with pytest.raises(ValueError, match="clients_per_round"):
        run(small_fed, cfg(clients_per_round=13))
    with pytest.raises(ValueError, match="clipping transform"):
        run(small_fed, cfg(), Algorithm(transforms=[GaussianNoise(1.0)]))
    with pytest.raises(ValueError, match="history"):
        run(small_fed, cfg(), history="all")


def test_numbers_do_not_depend_on_the_number_of_workers(small_fed):
    train, clients, test = small_fed
    outs = [run_federated(mlp(), train, clients, test, cfg(), stateful_algorithm(), workers=w) for w in (1, 2, 3)]
    assert all(torch.equal(outs[0].params, o.params) for o in outs[1:])
    with pytest.raises(ValueError, match="workers"):
        run_federated(mlp(), train, clients, test, cfg(), workers=0)


def test_autograd_path_with_a_penalty_trains(small_fed):
    train, clients, test = small_fed
    prox = Algorithm(penalty=lambda p, a, n: 0.5 * sum((x - y).pow(2).sum() for x, y in zip(p, a)))
    out = run_federated(mlp(), train, clients, test, cfg(), prox)
    plain = run(small_fed, cfg())
    assert not torch.equal(out.params, plain.params)
    assert out.final_accuracy > 0.3


def test_divergence_stops_training_with_a_flag(small_fed):
    out = run(small_fed, cfg(rounds=5, lr=1e6))
    assert out.diverged and out.rounds_completed < 5 and out.metrics[-1]["diverged"] == 1.0
    assert out.correct is None and out.correct_best is None  # no per-image results of a model that blew up


def test_a_run_keeps_the_per_image_results_of_its_last_and_its_best_model(small_fed):
    """What a paired test between two runs needs: which test images the final model and the model of the best
    accuracy (the first round that reached it) classify correctly; the unit file keeps both. ``evaluate`` counts
    the same per-image results."""

    _, _, test = small_fed
    out = run(small_fed, cfg(rounds=6, lr=0.5))
    accs = [m["accuracy"] for m in out.metrics]
    assert out.correct.shape == (len(test.y),) and out.correct.dtype == torch.bool
    assert out.correct.double().mean().item() == pytest.approx(accs[-1], abs=1e-12)
    assert out.correct_best.double().mean().item() == pytest.approx(max(accs), abs=1e-12)
    kept = RunSummary.from_dict(out.summary(extra_number=1.0).to_dict())
    assert torch.equal(kept.correct(), out.correct) and torch.equal(kept.correct(best=True), out.correct_best)
    assert kept.extra["extra_number"] == 1.0
    x, y = test.x, test.y
    model = mlp()
    correct, loss = evaluate_per_sample(model, out.params, x, y, batch_size=7)
    assert torch.equal(correct, out.correct) and evaluate(model, out.params, x, y, batch_size=7) == (
        int(correct.sum()) / len(y), loss)


def test_as_dict_names_the_flat_vector_in_parameter_order():
    from fedlib.fl.params import as_dict, get_flat

    model = mlp()
    named = as_dict(model, get_flat(model))
    assert list(named) == [n for n, _ in model.named_parameters()]
    assert all(torch.equal(named[n], p.detach()) for n, p in model.named_parameters())
    with pytest.raises(ValueError, match="entries"):
        as_dict(model, torch.zeros(3))


def test_batched_clients_train_as_one_at_a_time(small_fed):
    """client_batch > 1 is the same local SGD (E epochs with a smaller last batch, momentum with dampening) summed
    in another order: equal to float32 rounding, for clients of different sizes (grouped by size)."""
    train, _, test = small_fed
    sizes = [40, 40, 30, 30, 50, 50, 40, 40, 60, 60, 20, 20]
    clients = list(torch.arange(480).split(sizes))
    config = cfg(clients_per_round=8, local=LocalSGD(2, 16, momentum=0.9, dampening=0.9))
    one = run_federated(mlp(), train, clients, test, config)
    for k in (2, 3):
        batched = run_federated(mlp(), train, clients, test, config, client_batch=k)
        assert torch.allclose(batched.params, one.params, atol=1e-6)
        assert not torch.equal(batched.params, run_federated(mlp(), train, clients, test, cfg(seed=1),
                                                             client_batch=k).params)
        for a, b in zip(batched.metrics, one.metrics):
            assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
            assert a["accuracy"] == pytest.approx(b["accuracy"], abs=0.01)


def test_batched_numbers_do_not_depend_on_the_number_of_workers(small_fed):
    train, clients, test = small_fed
    outs = [run_federated(mlp(), train, clients, test, cfg(), stateful_algorithm(), workers=w, client_batch=3)
            for w in (1, 2, 3)]
    assert all(torch.equal(outs[0].params, o.params) for o in outs[1:])


def test_batched_clients_refuse_what_they_cannot_train(small_fed):
    from fedlib.models import build_model

    train, clients, test = small_fed
    with pytest.raises(ValueError, match="client_batch"):
        run_federated(mlp(), train, clients, test, cfg(), client_batch=0)
    with pytest.raises(ValueError, match="MLP"):
        run_federated(build_model("cnn_mnist", generator=make_generator(0)), train, clients, test, cfg(),
                      client_batch=2)
    prox = Algorithm(penalty=lambda p, a, n: sum((x - y).pow(2).sum() for x, y in zip(p, a)))
    with pytest.raises(ValueError, match="penalty"):
        run_federated(mlp(), train, clients, test, cfg(), prox, client_batch=2)


def test_channels_last_trains_a_cnn_to_the_same_numbers_up_to_rounding_and_leaves_an_mlp_alone(small_fed):
    from fedlib.models import build_model

    train, clients, test = small_fed
    cnn = lambda: build_model("cnn_mnist", generator=make_generator(0))  # noqa: E731
    nchw = run_federated(cnn(), train, clients, test, cfg())
    model = cnn()
    nhwc = run_federated(model, train, clients, test, cfg(), channels_last=True)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert not torch.equal(nhwc.params, nchw.params)  # other kernels ...
    assert torch.allclose(nhwc.params, nchw.params, atol=1e-4)  # ... the same training (2.7e-5 after 3 rounds)
    assert [m["accuracy"] for m in nhwc.metrics] == pytest.approx([m["accuracy"] for m in nchw.metrics], abs=0.02)
    assert torch.equal(run_federated(mlp(), train, clients, test, cfg(), channels_last=True).params,
                       run_federated(mlp(), train, clients, test, cfg()).params)


def test_default_client_batch_batches_only_on_a_gpu_what_the_batched_trainer_can_train():
    from fedlib.fl.engine import default_client_batch
    from fedlib.models import build_model

    cuda, cpu = torch.device("cuda"), torch.device("cpu")  # only compared, never allocated on
    prox = Algorithm(penalty=lambda p, a, n: sum((x - y).pow(2).sum() for x, y in zip(p, a)))
    cnn = build_model("cnn_mnist", generator=make_generator(0))
    frozen = mlp()
    frozen[-1].bias.requires_grad_(False)
    assert default_client_batch(mlp(), Algorithm(), cfg(clients_per_round=7), cuda) == 7
    assert default_client_batch(mlp(), Algorithm(), cfg(clients_per_round=7), cpu) == 1
    assert default_client_batch(mlp(), prox, cfg(clients_per_round=7), cuda) == 1
    assert default_client_batch(mlp(), Algorithm(loss=lambda z, y, n: z.sum()), cfg(), cuda) == 1
    assert default_client_batch(cnn, Algorithm(), cfg(), cuda) == 1
    assert default_client_batch(frozen, Algorithm(), cfg(), cuda) == 1


def test_an_explicit_cpu_device_is_the_default_run_and_results_are_cpu_tensors(small_fed):
    algo = lambda: Algorithm(transforms=[MedianClip(), GaussianNoise(0.5)])  # noqa: E731
    a = run(small_fed, cfg(), algo(), history="updates")
    b = run(small_fed, cfg(), algo(), history="updates", device="cpu")
    assert torch.equal(a.params, b.params) and a.metrics == b.metrics
    assert a.params.device.type == "cpu" and all(m.device.type == "cpu" for m in b.history.models)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/device_units.sh runs it there)")
@pytest.mark.parametrize("case", ["mlp batched", "mlp one at a time", "cnn", "cnn with a penalty"])
def test_runs_on_cuda_agree_with_the_cpu(small_fed, tmp_path, case):
    """Clients train on the GPU, the server side (noise, clipping, aggregation) stays on the CPU: the same clients
    and noise, final models equal to float32 rounding; the caller's model stays on the CPU; a GPU checkpoint
    resumes a run on the CPU."""
    from fedlib.models import build_model

    train, clients, test = small_fed
    net = (lambda: build_model("cnn_mnist", generator=make_generator(0))) if "cnn" in case else mlp
    prox = (lambda p, a, n: 0.1 * sum((x - y).pow(2).sum() for x, y in zip(p, a))) if "penalty" in case else None
    algo = lambda: Algorithm(transforms=[MedianClip(), GaussianNoise(0.5)], penalty=prox)  # noqa: E731
    batch = 1 if case == "mlp one at a time" else None
    # the CNN at LR 0.1 diverged in round 2 on both devices (2026-12-04, H200), and runs that blow up amplify float32
    # rounding beyond any tolerance; at LR 0.02 channels-last and NCHW kernels on the CPU agree to 1.2e-7
    config = cfg(lr=0.02) if "cnn" in case else cfg()
    cpu = run_federated(net(), train, clients, test, config, algo(), history="updates")
    assert not cpu.diverged
    model = net()
    gpu = run_federated(model, train, clients, test, config, algo(), history="updates", device="cuda",
                        client_batch=batch, checkpoint=tmp_path / "run.pt")
    assert next(model.parameters()).device.type == "cpu" and gpu.params.device.type == "cpu"
    assert torch.allclose(gpu.params, cpu.params, atol=1e-4)
    assert gpu.history.participants == cpu.history.participants
    for a, b in zip(gpu.metrics, cpu.metrics):
        assert a["accuracy"] == pytest.approx(b["accuracy"], abs=0.02)
    resumed = run_federated(net(), train, clients, test, config, algo(), history="updates",
                            checkpoint=tmp_path / "run.pt")
    assert torch.equal(resumed.params, gpu.params)


def test_divergence_check_sees_every_non_finite_entry():
    from fedlib.fl.engine import _all_finite

    x = torch.randn(5, 1000)
    assert _all_finite(x)
    for pos in (0, 2345, 4999):
        for bad in (float("nan"), float("inf"), -float("inf")):
            y = x.clone()
            y.view(-1)[pos] = bad
            assert not _all_finite(y)


@pytest.mark.parametrize("name", ["mlp", "logreg", "cnn_cifar", "cnn_sifu", "cnn_sifu_cifar", "cnn6", "lenet5",
                                  "resnet_mini"])
def test_evaluation_in_chunks_gives_the_same_numbers(name):
    import torch.nn.functional as F

    from fedlib.fl.batched import BatchedClients
    from fedlib.models import MODELS, forward_in_chunks, uses_batch_statistics

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = MODELS[name]()
    side = (3, 32, 32) if "cifar" in name or name == "cnn6" else (1, 28, 28)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(450, *side, generator=g), torch.randint(0, 10, (450,), generator=g)
    flat = get_flat(model)
    model.eval()
    with torch.no_grad():
        whole = model(x)
        chunked = forward_in_chunks(model, x, model, chunk=64)
        pieces = torch.cat([model(x[i:i + 64]) for i in range(0, 450, 64)])
    if name in ("mlp", "logreg", "resnet_mini"):  # an MLP, and a model normalising with batch statistics: whole
        assert torch.equal(chunked, whole)
        assert uses_batch_statistics(model) == (name == "resnet_mini")
        if name == "resnet_mini":  # 64 at a time would change its logits
            assert (pieces - whole).abs().max() > 1e-3
    else:  # a CNN: equal up to float32 rounding
        assert torch.equal(chunked, pieces) and torch.allclose(chunked, whole, rtol=0, atol=1e-6)
    acc = float((whole.argmax(1) == y).double().mean())
    assert evaluate(model, flat, x, y, batch_size=450 if name == "resnet_mini" else 200)[0] == acc  # blocks of 200
    assert evaluate(model, flat, x, y, batch_size=450)[1] == pytest.approx(float(F.cross_entropy(whole, y)), rel=1e-6)
    batched = BatchedClients(model).accuracy(flat, x.reshape(3, 150, *side), y.reshape(3, 150))
    assert torch.equal(batched, (whole.argmax(1) == y).float().reshape(3, 150).mean(1))
    with pytest.raises(ValueError, match="chunk"):
        forward_in_chunks(model, x, model, chunk=0)


def test_importing_fedlib_turns_off_tf32_so_a_gpu_computes_float32_like_the_cpu():
    import fedlib  # noqa: F401

    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
