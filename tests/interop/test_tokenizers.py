"""specdec's tokenizers against the libraries that write them.

Every tokenizer here is built or trained at test time (no downloads) by Hugging Face `tokenizers`,
saved through `transformers` where that adds tokenizer_config.json, or trained by `sentencepiece`;
specdec (`specdec tokenize`) must give exactly the library's ids on a varied corpus (prose, code,
Unicode, whitespace runs, numbers, special tokens), decode the library's way, and refuse what it
does not support with an error naming the file and field.
"""
import json
import os

import pytest
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SPECDEC_SOURCE_DIR", os.path.join(HERE, "..", ".."))

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def held_out_prose():
    with open(os.path.join(SOURCE, "experiments", "train", "heldout_prompts.json")) as f:
        prompts = json.load(f)
    return [p for domain in prompts.values() for p in domain][:12]


CORPUS = held_out_prose() + [
    "def main(argv):\n    for i in range(10):\n\t\tprint(f\"{i:>4}\")  # tabs and spaces\n    return 0\n",
    "int x = a[i] + b->c; // C++ \r\n if (x != 0x1F) { y <<= 2; }",
    "Ünïcödé façade, naïve café — “quotes” and ‘single’ … ½ ¾",
    "日本語のテキストと中文文本，한국어 텍스트.",
    "Emoji 🙂🙃 👩‍👩‍👧‍👦 flags 🇫🇷 and a skin tone 👍🏽",
    "NFC é vs NFD e\u0301, ligature ﬁ, fullwidth ＡＢＣ, Angstrom \u212B",
    "Ελληνικά και русский текст, עברית ו-العربية",
    "    leading spaces, trailing spaces    ",
    "many     spaces\n\n\nnewlines\r\n\r\ncarriage returns\t\ttabs \u00a0nbsp \u3000ideographic",
    "Numbers 1234567890 3.14159 -42 1,000,000 and 007",
    "He's here, they'll go, I'M SURE we'd've DON'T can't",
    "",
    " ",
    "a",
    "<s> literal special tokens <|begin_of_text|> inside </s> text <|im_start|>user<|im_end|>",
    "x" * 300,
    "mixed\u200bzero\u200bwidth and control \x01\x7f chars",
]
SPECIALS = ["<unk>", "<s>", "</s>", "<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"]


def training_text():
    return CORPUS * 3


def byte_level_bpe(pattern, normalizer=None, ignore_merges=True, template=True):
    t = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if normalizer:
        t.normalizer = normalizer
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(training_text(), trainers.BpeTrainer(
        vocab_size=700, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=SPECIALS, show_progress=False))
    steps = [processors.ByteLevel(trim_offsets=False)]
    if template:
        steps.append(processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[
            ("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))]))
    t.post_processor = processors.Sequence(steps)
    return t


def llama3():
    return byte_level_bpe(LLAMA3_PATTERN)


def qwen2():
    return byte_level_bpe(QWEN2_PATTERN, normalizer=normalizers.NFC(), ignore_merges=False, template=False)


def gpt2():
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(training_text(), trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"],
        show_progress=False))
    return t


def gpt2_prefix_space():
    t = gpt2()
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    return t


def llama2():
    """Llama-2 / TinyLlama's converted SentencePiece BPE: '▁' for spaces, byte fallback."""
    t = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    t.train_from_iterator(training_text(), trainers.BpeTrainer(
        vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens, limit_alphabet=60, show_progress=False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))])
    return t


def mistral_metaspace():
    """The newer spelling of the same: a Metaspace pre-tokenizer with prepend_scheme 'first'."""
    t = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    t.train_from_iterator(training_text(), trainers.BpeTrainer(
        vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens, limit_alphabet=60, show_progress=False))
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))])
    return t


def unigram_metaspace():
    t = Tokenizer(models.Unigram())
    t.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    t.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    t.train_from_iterator(training_text(), trainers.UnigramTrainer(
        vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"], unk_token="<unk>", show_progress=False))
    return t


def unigram_byte_fallback():
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(), normalizers.Strip()])
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=True)])
    t.train_from_iterator(CORPUS[:10] * 3, trainers.UnigramTrainer(
        vocab_size=300, special_tokens=["<unk>"] + [f"<0x{b:02X}>" for b in range(256)], unk_token="<unk>",
        byte_fallback=True, show_progress=False))
    return t


def whitespace_bpe():
    """More components: NFD + Replace(regex), Whitespace and Digits pre-tokenizers, unknown tokens."""
    t = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=False))
    t.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Replace(Regex(r"\d{4,}"), "####")])
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=False)])
    t.train_from_iterator(CORPUS[:8] * 3, trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>"], limit_alphabet=50,
                                                              show_progress=False))
    return t


def with_added_tokens(base):
    """User-added tokens with every matching flag, normalized and not."""
    t = base()
    t.add_tokens([AddedToken("café", normalized=True), AddedToken(" spaces", lstrip=False, rstrip=True),
                  AddedToken("main", single_word=True), AddedToken("ONE", lstrip=True, normalized=False)])
    t.add_special_tokens([AddedToken("<|tool|>", lstrip=True, rstrip=True, normalized=False)])
    return t


BUILDERS = {
    "llama3-bytelevel-bpe": llama3,
    "qwen2-nfc-bytelevel-bpe": qwen2,
    "gpt2-bytelevel-bpe": gpt2,
    "gpt2-prefix-space": gpt2_prefix_space,
    "llama2-sentencepiece-bpe": llama2,
    "mistral-metaspace-bpe": mistral_metaspace,
    "unigram-metaspace": unigram_metaspace,
    "unigram-byte-fallback-nfkc-lowercase": unigram_byte_fallback,
    "whitespace-digits-bpe": whitespace_bpe,
    "llama3-added-tokens": lambda: with_added_tokens(llama3),
    "llama2-added-tokens": lambda: with_added_tokens(llama2),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every tokenizer, saved to its own directory; built once per module."""
    out = {}
    for name, build in BUILDERS.items():
        d = tmp_path_factory.mktemp(name)
        tok = build()
        tok.save(str(d / "tokenizer.json"))
        out[name] = (str(d), Tokenizer.from_file(str(d / "tokenizer.json")))
    return out


def encode_with_specdec(specdec, directory, text, tmp_path, special=True):
    path = tmp_path / "text.txt"
    path.write_bytes(text.encode("utf-8"))
    args = ["tokenize", "--model", directory, "--file", path] + ([] if special else ["--no-special"])
    return specdec.json(*args)["ids"]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_encode_matches_tokenizers(name, built, specdec, tmp_path):
    directory, tok = built[name]
    for i, text in enumerate(CORPUS):
        for special in (True, False):
            want = tok.encode(text, add_special_tokens=special).ids
            got = encode_with_specdec(specdec, directory, text, tmp_path, special)
            assert got == want, (f"{name}, corpus text {i} {text[:40]!r}, add_special_tokens={special}: "
                                 f"first difference at {next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))}"
                                 f"\n  specdec    {got[:40]}\n  tokenizers {want[:40]}")


@pytest.mark.parametrize("name", list(BUILDERS))
def test_decode_matches_tokenizers(name, built, specdec):
    directory, tok = built[name]
    for i, text in enumerate(CORPUS):
        ids = tok.encode(text).ids
        if not ids:
            continue
        for skip in (False, True):
            want = tok.decode(ids, skip_special_tokens=skip)
            args = ["tokenize", "--model", directory, "--decode", ",".join(map(str, ids))] + (["--skip-special"] if skip else [])
            got = specdec.json(*args)["text"]
            assert got == want, f"{name}, corpus text {i}, skip_special_tokens={skip}:\n  specdec    {got!r}\n  tokenizers {want!r}"


@pytest.mark.parametrize("name", list(BUILDERS))
def test_streamed_decoding_equals_decoding(name, built, specdec):
    """Decoding token by token (as generate --stream prints) gives the library's decode of the
    whole, and no chunk ends inside a character (a chunk cut mid-character would hold U+FFFD)."""
    directory, tok = built[name]
    for i, text in enumerate(CORPUS):
        ids = tok.encode(text).ids
        if not ids:
            continue
        out = specdec.json("tokenize", "--model", directory, "--decode", ",".join(map(str, ids)), "--stream")
        want = tok.decode(ids, skip_special_tokens=False)
        assert "".join(out["chunks"]) == want, f"{name}, corpus text {i}: streamed {out['chunks'][:12]}"
        if "\ufffd" not in want:
            assert not any("\ufffd" in c for c in out["chunks"]), f"{name}, corpus text {i}: a chunk was cut inside a character"


@pytest.mark.parametrize("name", ["llama3-bytelevel-bpe", "qwen2-nfc-bytelevel-bpe", "gpt2-bytelevel-bpe"])
def test_byte_level_round_trip(name, built, specdec, tmp_path):
    """Byte-level BPE is lossless: decoding the ids gives the text back exactly (Qwen2 up to NFC)."""
    import unicodedata
    directory, _ = built[name]
    for i, text in enumerate(CORPUS):
        ids = encode_with_specdec(specdec, directory, text, tmp_path, special=False)
        if not ids:
            continue
        got = specdec.json("tokenize", "--model", directory, "--decode", ",".join(map(str, ids)))["text"]
        want = unicodedata.normalize("NFC", text) if name.startswith("qwen2") else text
        assert got == want, f"{name}, corpus text {i}: round trip gave {got!r}"


@pytest.mark.parametrize("name", ["llama3-bytelevel-bpe", "llama2-sentencepiece-bpe", "unigram-metaspace"])
def test_transformers_tokenizer_files(name, specdec, tmp_path):
    """Saved through transformers (tokenizer.json + tokenizer_config.json, BOS/EOS named there): the
    ids transformers' own AutoTokenizer gives, and BOS/EOS as it reports them."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    tok = BUILDERS[name]()
    bos, eos = ("<|begin_of_text|>", "<|end_of_text|>") if name.startswith("llama3") else ("<s>", "</s>")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, unk_token="<unk>")
    fast.save_pretrained(str(tmp_path))
    auto = AutoTokenizer.from_pretrained(str(tmp_path))
    for i, text in enumerate(CORPUS):
        want = auto(text)["input_ids"]
        got = encode_with_specdec(specdec, str(tmp_path), text, tmp_path)
        assert got == want, f"{name} via transformers, corpus text {i} {text[:40]!r}:\n  specdec      {got[:30]}\n  transformers {want[:30]}"


def train_sentencepiece(tmp_path, model_type):
    import sentencepiece as spm
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(t for t in training_text() if t.strip()), encoding="utf-8")
    prefix = tmp_path / "tokenizer"
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), vocab_size=600, model_type=model_type,
                                   byte_fallback=True, character_coverage=0.9995, bos_id=1, eos_id=2, unk_id=0,
                                   minloglevel=2, num_threads=1)
    return spm.SentencePieceProcessor(model_file=str(prefix) + ".model")


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_sentencepiece_model(model_type, specdec, tmp_path):
    """tokenizer.model, trained by the sentencepiece library: specdec (Debian's libsentencepiece)
    gives its ids, with BOS first as Llama's tokenizer adds it, and decodes to its text."""
    sp = train_sentencepiece(tmp_path, model_type)
    for i, text in enumerate(CORPUS):
        want = [sp.bos_id()] + sp.encode(text)
        got = encode_with_specdec(specdec, str(tmp_path), text, tmp_path)
        assert got == want, f"sentencepiece {model_type}, corpus text {i} {text[:40]!r}:\n  specdec {got[:30]}\n  spm     {want[:30]}"
        decoded = specdec.json("tokenize", "--model", str(tmp_path), "--decode", ",".join(map(str, want[1:])))["text"] if len(want) > 1 else ""
        assert decoded == sp.decode(want[1:]), f"sentencepiece {model_type}, corpus text {i}: decode {decoded!r}"


def test_refusals(specdec, built, tmp_path):
    """Bad tokenizer files: clear errors naming the file and the field, never a crash."""
    directory, tok = built["llama3-bytelevel-bpe"]
    good = json.loads(tok.to_str())

    def write(name, content):
        d = tmp_path / name
        d.mkdir()
        (d / "tokenizer.json").write_text(content if isinstance(content, str) else json.dumps(content))
        return d

    cases = {
        "malformed-json": ('{"model": {', ["tokenizer.json", "not valid JSON"]),
        "unknown-pre-tokenizer": ({**good, "pre_tokenizer": {"type": "BertPreTokenizer"}},
                                  ["tokenizer.json", "pre_tokenizer.type", "BertPreTokenizer"]),
        "unknown-model": ({**good, "model": {"type": "WordPiece", "vocab": {"a": 0}}}, ["tokenizer.json", "model.type", "WordPiece"]),
        "unknown-normalizer": ({**good, "normalizer": {"type": "Precompiled", "precompiled_charsmap": ""}},
                               ["normalizer.type", "Precompiled"]),
        "bad-merge": ({**good, "model": {**good["model"], "merges": [["zz-not", "in-vocab"]]}}, ["model.merges[0]", "not in model.vocab"]),
        "bad-regex": ({**good, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated",
                                                 "invert": False}}, ["pre_tokenizer.pattern", "does not compile"]),
        "no-model": ({k: v for k, v in good.items() if k != "model"}, ["field 'model' is missing"]),
    }
    for name, (content, needles) in cases.items():
        d = write(name, content)
        err = specdec.fails("tokenize", "--model", d, "--text", "hello")
        for needle in needles:
            assert needle in err, f"{name}: the error does not say {needle!r}:\n{err}"


def test_vocab_size_disagreement(specdec, built, tmp_path):
    """A tokenizer with more ids than the model's vocab_size is refused, naming both files."""
    from transformers import LlamaConfig, LlamaForCausalLM
    import torch
    torch.manual_seed(0)
    directory, tok = built["llama3-bytelevel-bpe"]
    model = LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1))
    model.save_pretrained(str(tmp_path))
    tok.save(str(tmp_path / "tokenizer.json"))
    err = specdec.fails("generate", "--model", tmp_path, "--prompt", "hello", "--max-new-tokens", "2")
    assert "tokenizer.json" in err and "vocab_size 300" in err, err
    err = specdec.fails("tokenize", "--model", tmp_path, "--text", "hello")
    assert "config.json" in err and "vocab_size 300" in err, err


def test_text_prompt_with_a_transformers_checkpoint(specdec, tmp_path):
    """A checkpoint directory as transformers saves it (model, tokenizer, generation config):
    `specdec generate --prompt TEXT` encodes the prompt as the tokenizer does, generates what
    transformers' generate() generates, stops where it stops (generation_config.json's
    eos_token_id) and prints the text its tokenizer decodes."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    tok = llama3()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>")
    torch.manual_seed(7)
    config = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, bos_token_id=fast.bos_token_id,
                         eos_token_id=fast.eos_token_id)
    model = LlamaForCausalLM(config).eval()
    prompt = "def main(argv):\n    for i in"
    auto = AutoTokenizer
    for name, stop in (("no-stop", None), ("stop", 3)):
        d = tmp_path / name
        model.save_pretrained(str(d))
        fast.save_pretrained(str(d))
        ids = auto.from_pretrained(str(d))(prompt, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            free = model.generate(ids, max_new_tokens=12, do_sample=False, eos_token_id=None)[0, ids.shape[1]:].tolist()
        if stop is not None:
            # The token generated at step `stop` becomes an end-of-turn token in generation_config.json.
            GenerationConfig(bos_token_id=fast.bos_token_id, eos_token_id=[fast.eos_token_id, free[stop]]).save_pretrained(str(d))
        with torch.no_grad():
            gen = model.generate(ids, max_new_tokens=12, do_sample=False,
                                 generation_config=GenerationConfig.from_pretrained(str(d)))[0, ids.shape[1]:].tolist()
        out = specdec.json("generate", "--model", d, "--prompt", prompt, "--max-new-tokens", "12")
        assert out["prompt_tokens"] == ids[0].tolist(), f"{name}: prompt ids {out['prompt_tokens']} vs {ids[0].tolist()}"
        assert out["output_tokens"] == gen, f"{name}: specdec {out['output_tokens']} vs transformers {gen}"
        assert out["stop_reason"] == ("eos" if stop is not None else "max_tokens"), out["stop_reason"]
        assert out["output_text"] == auto.from_pretrained(str(d)).decode(gen), name
