import json
import warnings

import pytest

# SGLang's kernel modules warn at import on a machine without a GPU.
warnings.filterwarnings("ignore", category=UserWarning)

TARGET_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "torch_dtype": "bfloat16",
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
}
DRAFT_CONFIG = dict(TARGET_CONFIG, architectures=["LlamaForCausalLMEagle3"], num_hidden_layers=1, draft_vocab_size=1024)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """Folders holding only config.json: enough for SGLang's full argument resolution on CPU."""
    root = tmp_path_factory.mktemp("models")
    for name, cfg in (("target", TARGET_CONFIG), ("draft", DRAFT_CONFIG)):
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(cfg))
    return str(root / "target"), str(root / "draft")


@pytest.fixture(autouse=True)
def _no_carried_settings(monkeypatch):
    monkeypatch.delenv("ADAPTIVE_SPEC_CONFIG_JSON", raising=False)
