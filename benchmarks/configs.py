"""The configurations measured: attention (decode, prefill, dense twins, a KV-length sweep, split-KV decode) and the copy-kv gather."""

from __future__ import annotations

from dataclasses import dataclass

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}


@dataclass(frozen=True)
class Config:
    kind: str  # pagedir-gen subcommand: "attention" or "copy-kv"
    arch: str
    head_dim: int
    page_tokens: int
    phase: str = "gather"  # decode, prefill or gather (copy-kv)
    batch: int = 2
    heads_q: int = 8
    heads_kv: int = 2
    seq_q: int = 1
    seq_k: int = 512
    dtype: str = "f16"
    causal: bool = False
    dense: bool = False
    #: Also run the kernel in the interpreter (check, instruction and byte counts).
    interpret: bool = False
    #: Table the configuration belongs to: "main", "sweep" (compile time against work), "dense" or "split".
    group: str = "main"
    #: pagedir-gen --num-splits (0: chosen from the chip's compute units); None: no flag, one split.
    splits: int | None = None
    #: pagedir-gen --seq-lens: ragged sequences, each its length (the model still reads every token).
    ragged: bool = False
    #: How the K/V tiles reach LDS: "" (registers, row-major tiles), "swizzle" (--lds-swizzle) or "dma"
    #: (--lds-swizzle --lds-dma: direct global -> LDS loads into the swizzled tiles); "cp.async" (--lds-dma
    #: alone: NVIDIA's cp.async copies into row-major tiles).
    lds: str = ""
    #: pagedir-gen --page-table and --kv-layout: "pointers" (the default), or cache pools in place
    #: ("blocks" with "nhd", "hnd" or "vllm-pa").
    page_table: str = "pointers"
    kv_layout: str = "nhd"

    @property
    def name(self) -> str:
        layout = "dense" if self.dense else f"p{self.page_tokens}"
        if self.page_table != "pointers":
            layout = f"{self.page_table}-{self.kv_layout}-{layout}"
        shape = f"b{self.batch}-hq{self.heads_q}-hkv{self.heads_kv}-sq{self.seq_q}" if self.kind == "attention" else f"b{self.batch}-h{self.heads_kv}"
        split = "" if self.splits is None else "-splits-auto" if self.splits == 0 else f"-splits{self.splits}"
        lds = f"-lds-{self.lds}" if self.lds else ""
        ragged = "-ragged" if self.ragged else ""
        return (f"{self.phase}-{shape}-sk{self.seq_k}-d{self.head_dim}-{layout}-{self.dtype}-{self.arch}{split}{lds}"
                f"{ragged}")

    @property
    def paged_twin(self) -> str:
        """The name of the same configuration with paged K/V (for the paged vs dense table)."""
        return Config(**{**self.__dict__, "dense": False}).name

    def argv(self) -> list[str]:
        """The pagedir-gen arguments."""
        if self.kind == "copy-kv":
            return ["--batch", str(self.batch), "--num-heads-kv", str(self.heads_kv), "--seq-len", str(self.seq_k),
                    "--head-dim", str(self.head_dim), "--page-size", str(self.page_tokens), "--dtype", self.dtype,
                    "--arch", self.arch]
        argv = ["--batch", str(self.batch), "--num-heads-q", str(self.heads_q), "--num-heads-kv", str(self.heads_kv),
                "--seq-len-q", str(self.seq_q), "--seq-len-k", str(self.seq_k), "--head-dim", str(self.head_dim),
                "--page-size", str(self.page_tokens), "--dtype", self.dtype, "--arch", self.arch]
        splits = [] if self.splits is None else ["--num-splits", str(self.splits)]
        lds = {"": [], "swizzle": ["--lds-swizzle"], "dma": ["--lds-swizzle", "--lds-dma"], "cp.async": ["--lds-dma"]}[self.lds]
        pools = ["--page-table", self.page_table, "--kv-layout", self.kv_layout] if self.page_table != "pointers" else []
        return (argv + (["--causal"] if self.causal else []) + (["--dense"] if self.dense else []) + splits + lds
                + (["--seq-lens"] if self.ragged else []) + pools)

    def required_bytes(self) -> dict[str, int]:
        """What the kernel cannot do without: every live K/V byte, the page pointers, Q once; out written once.

        No configuration here is ragged, so every token up to seq_k is live and
        every page of the table is needed.
        """
        e = ELEMENT_BYTES[self.dtype]
        kv_tokens = self.batch * self.heads_kv * self.seq_k
        pages = self.batch * self.heads_kv * self.seq_k // self.page_tokens
        if self.kind == "copy-kv":
            return {"kv": kv_tokens * self.head_dim * e, "page_table": pages * 8, "q": 0,
                    "out": kv_tokens * self.head_dim * e}
        q = self.batch * self.heads_q * self.seq_q * self.head_dim * e
        table = 0 if self.dense else 2 * pages * 8 if self.page_table == "pointers" else self.batch * (pages // self.heads_kv) * 4
        return {"kv": 2 * kv_tokens * self.head_dim * e, "page_table": table, "q": q, "out": q}

    def as_dict(self) -> dict:
        return {**self.__dict__, "name": self.name, "paged_twin": self.paged_twin, "argv": self.argv()}


def configurations(quick: bool) -> list[Config]:
    if quick:
        return [
            Config("copy-kv", "gfx942", 64, 16, seq_k=128, interpret=True),
            Config("copy-kv", "gfx1100", 64, 16, seq_k=128),
            Config("attention", "gfx942", 64, 16, "decode", seq_k=128, interpret=True),
            Config("attention", "gfx1100", 64, 16, "decode", seq_k=128),
            Config("attention", "gfx942", 64, 16, "prefill", batch=1, seq_q=64, seq_k=64, causal=True),
            Config("attention", "gfx942", 64, 16, "decode", seq_k=128, dense=True, group="dense"),
            # The decode kernel every report shows the check time of.
            Config("attention", "gfx942", 128, 16, "decode", interpret=True),
            Config("attention", "gfx942", 64, 16, "decode", seq_k=128, splits=0, interpret=True, group="split"),
        ]
    configs = []
    for arch in ("gfx942", "gfx1100"):
        for head_dim in (64, 128):
            for page in (16, 64):
                on_942 = arch == "gfx942"
                configs.append(Config("attention", arch, head_dim, page, "decode", interpret=on_942))
                configs.append(Config("attention", arch, head_dim, page, "prefill", batch=1, seq_q=256, seq_k=256,
                                      causal=True, interpret=on_942 and head_dim == 64 and page == 16))
                configs.append(Config("copy-kv", arch, head_dim, page, interpret=on_942))
            configs.append(Config("attention", arch, head_dim, 16, "decode", dense=True, group="dense"))
            configs.append(Config("attention", arch, head_dim, 16, "prefill", batch=1, seq_q=256, seq_k=256,
                                  causal=True, dense=True, group="dense"))
    # Compile time and code against the work: more KV tiles, then wider heads.
    for seq_k in (128, 2048, 8192):
        configs.append(Config("attention", "gfx942", 128, 16, "decode", seq_k=seq_k, group="sweep"))
    # Split-KV decode (gfx942, 304 CUs): few sequences and KV heads, unsplit then with the splits the cost
    # model chooses (pagedir.backend.split_kv); a batch that fills the grid already (64 x 8 KV heads) keeps
    # one split; MHA at batch 1 (8 KV heads) splits with few combine bytes.
    for batch, heads_q, heads_kv, seq_k, interpret in ((1, 8, 1, 8192, False), (2, 16, 2, 512, True),
                                                       (1, 8, 8, 4096, False)):
        for splits in (None, 0):
            configs.append(Config("attention", "gfx942", 128, 16, "decode", batch=batch, heads_q=heads_q,
                                  heads_kv=heads_kv, seq_k=seq_k, splits=splits, interpret=interpret, group="split"))
    configs.append(Config("attention", "gfx942", 128, 16, "decode", batch=64, heads_q=64, heads_kv=8, seq_k=4096,
                          splits=0, group="split"))
    # NVIDIA (sm_90, sm_80): the main decode and causal prefill shapes on the tensor cores (mma.sync), the K/V tiles
    # through registers (software-pipelined) or copied by cp.async.
    for arch in ("sm_90", "sm_80"):
        for head_dim in (64, 128):
            for lds in ("", "cp.async"):
                configs.append(Config("attention", arch, head_dim, 16, "decode", lds=lds, group="nvidia"))
                configs.append(Config("attention", arch, head_dim, 16, "prefill", batch=1, seq_q=256, seq_k=256,
                                      causal=True, lds=lds, group="nvidia"))
    # LDS layouts of the matrix loop (gfx942, D 128): row-major tiles, swizzled tiles, direct-to-LDS loads;
    # decode GQA 8 and MHA, causal prefill GQA 8. The interpreter counts their bank conflicts.
    for shape in (dict(phase="decode", heads_q=16, heads_kv=2), dict(phase="decode", heads_q=8, heads_kv=8),
                  dict(phase="prefill", batch=1, heads_q=16, heads_kv=2, seq_q=256, seq_k=256, causal=True)):
        for lds in ("", "swizzle", "dma"):
            config = Config("attention", "gfx942", 128, 16, lds=lds, interpret=True, group="lds", **shape)
            if all(c.name != config.name for c in configs):  # decode GQA 8 row-major: the split table's
                configs.append(config)
    # Serving cache pools read in place through a block table (gfx942 and gfx1100, D 128, blocks of 16):
    # vLLM's paged-attention caches (vllm-pa: K split in 16-byte chunks, V D-major) next to nhd and hnd.
    for arch in ("gfx942", "gfx1100"):
        for shape in (dict(phase="decode", heads_q=16, heads_kv=2),
                      dict(phase="prefill", batch=1, heads_q=16, heads_kv=2, seq_q=256, seq_k=256, causal=True)):
            for kv_layout in ("nhd", "hnd", "vllm-pa"):
                configs.append(Config("attention", arch, 128, 16, page_table="blocks", kv_layout=kv_layout,
                                      interpret=arch == "gfx942" and shape["phase"] == "decode", group="layouts",
                                      **shape))
    return configs


#: The chips `make bench-peers` compiles for (pagedir and vLLM's Triton kernels both target them).
PEER_ARCHS = ("gfx942", "gfx950", "gfx1100")


def peer_configurations(archs: tuple[str, ...] = PEER_ARCHS) -> list[Config]:
    """The shapes of the side-by-side comparison with vLLM's kernels (`make bench-peers`), D 128, pages of 16, f16.

    Decode: 2 sequences, GQA 1 (8 query heads on 8 KV heads) and GQA 8 (16 on 2), 512 and 8192
    tokens, split along the KV sequence as the chip asks (``--num-splits 0``); the README's main
    kernel (GQA 8, 512 tokens, ragged: ``--seq-lens``) and one sequence of GQA 8 on one KV head,
    8192 tokens. Prefill: one sequence, 32 query heads on 8 KV heads, causal, Sq = Sk = 256 and 2048.
    """
    configs = []
    for arch in archs:
        for heads_q, heads_kv in ((8, 8), (16, 2)):
            for seq_k in (512, 8192):
                configs.append(Config("attention", arch, 128, 16, "decode", batch=2, heads_q=heads_q, heads_kv=heads_kv,
                                      seq_k=seq_k, splits=0, group="peers"))
        configs.append(Config("attention", arch, 128, 16, "decode", batch=2, heads_q=16, heads_kv=2, seq_k=512,
                              splits=0, group="peers", ragged=True))
        configs.append(Config("attention", arch, 128, 16, "decode", batch=1, heads_q=8, heads_kv=1, seq_k=8192,
                              splits=0, group="peers"))
        for seq in (256, 2048):
            configs.append(Config("attention", arch, 128, 16, "prefill", batch=1, heads_q=32, heads_kv=8, seq_q=seq,
                                  seq_k=seq, causal=True, group="peers"))
    return configs
