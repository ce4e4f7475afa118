"""h3_config.yaml validation: seed keys load, unknown keys and bad values are named, and each
key belongs to one owner (the runtime's H3Config or the pipeline's Settings)."""

import subprocess
import sys
from pathlib import Path

import pytest

from h3.resources.settings import Settings
from h3_runtime.config import ConfigError, H3Config

REPO = Path(__file__).resolve().parents[1]


def test_repository_config_loads_with_seed_values():
    settings = Settings.load(REPO / "h3_config.yaml")
    cfg = settings.runtime
    assert cfg.scheduler.ahaz_alpha == 0.999
    assert cfg.scheduler.hbm_threshold == 0.95
    assert cfg.scheduler.hbf_threshold == 0.3
    assert cfg.hbf.prefetch_window == 2
    assert settings.hbf.compression_pca_dim >= 128
    assert settings.hbf.ann_index_type in ("IVF_SQ", "IVF_PQ", "HNSW")
    assert settings.cold_storage.ocr_enabled and settings.cold_storage.knowledge_graph_enabled


def test_pca_dim_below_128_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="hbf.compression_pca_dim"):
        Settings.parse({"hbf": {"compression_pca_dim": 64}})


@pytest.mark.parametrize(
    "data, key",
    [
        ({"schedular": {}}, "schedular"),
        ({"scheduler": {"ahaz_alfa": 0.9}}, "scheduler.ahaz_alfa"),
        ({"scheduler": {"ahaz_alpha": "high"}}, "scheduler.ahaz_alpha"),
        ({"hbf": {"ann_index_type": "FLAT"}}, "hbf.ann_index_type"),
        ({"hbf": {"compression_pca_dim": "128"}}, "hbf.compression_pca_dim"),
        ({"hbf": {"prefetch_windows": 3}}, "hbf.prefetch_windows"),
        ({"cold_storage": {"ocr_enabled": "yes"}}, "cold_storage.ocr_enabled"),
        ({"cold_storage": {"ocr_enable": True}}, "cold_storage.ocr_enable"),
        ({"scheduler": {"hbm_threshold": 0.2}}, "thresholds"),
        ({"runtime": {"cold_storage_max_gb": 0}}, "runtime.cold_storage_max_gb"),
    ],
)
def test_bad_keys_and_values_are_errors_naming_the_key(data, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        Settings.parse(data)


def test_unknown_key_lists_the_allowed_keys_of_both_owners(tmp_path):
    path = tmp_path / "h3_config.yaml"
    path.write_text("hbf:\n  prefetch_windows: 3\n")
    with pytest.raises(ConfigError) as err:
        Settings.load(path)
    message = str(err.value)
    assert str(path) in message and "prefetch_window" in message
    assert "compression_pca_dim" in message  # the pipeline's key of the same section


def test_runtime_owns_only_its_keys():
    # the runtime's config has no pipeline setting; strict, it names a pipeline key as unknown
    assert not hasattr(H3Config().hbf, "compression_pca_dim")
    assert not hasattr(H3Config(), "cold_storage")
    with pytest.raises(ConfigError, match=r"hbf\.compression_pca_dim"):
        H3Config.from_dict({"hbf": {"compression_pca_dim": 256}})
    # the engine's lenient load of the shared file keeps the runtime's keys, checked
    cfg = H3Config.load(REPO / "h3_config.yaml", strict=False)
    assert cfg.scheduler.ahaz_alpha == 0.999
    with pytest.raises(ConfigError, match=r"scheduler\.ahaz_alpha"):
        H3Config.from_dict({"scheduler": {"ahaz_alpha": 2.0}, "cold_storage": {}}, strict=False)
    # ...and a name one typo from the runtime's own is nobody else's key: still an error
    with pytest.raises(ConfigError, match="did you mean 'scheduler'"):
        H3Config.from_dict({"schedular": {"ahaz_alpha": 0.9}}, strict=False)
    with pytest.raises(ConfigError, match=r"model\.devcie; did you mean model\.device"):
        H3Config.from_dict({"model": {"devcie": "cpu"}}, strict=False)


def test_replace_revalidates():
    cfg = H3Config()
    assert cfg.replace("runtime", block_tokens=32).runtime.block_tokens == 32
    with pytest.raises(ConfigError):
        cfg.replace("runtime", block_tokens=0)


def test_runtime_does_not_know_where_the_dagster_instance_lives():
    hits = [str(p.relative_to(REPO)) for p in (REPO / "h3_runtime").rglob("*.py")
            if "DAGSTER_HOME" in p.read_text()]
    assert hits == []


def test_runtime_config_imports_without_the_pipeline():
    code = ("import sys, h3_runtime.config, h3_runtime.home; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('resources', 'assets', 'pipelines', 'dagster')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_shipped_file_says_what_the_code_defaults_are():
    # H3Engine() without a config runs the dataclass defaults (the benches do): a value changed
    # in h3_config.yaml only would make the README's measured defaults differ from a user's
    shipped = H3Config.load(REPO / "h3_config.yaml", strict=False).to_dict()
    defaults = H3Config().to_dict()
    for section, keys in shipped.items():
        for key, value in keys.items():
            if key in ("path", "cold_storage_path"):  # null in the file: resolved at run time
                continue
            assert value == defaults[section][key], f"{section}.{key}: file {value}, code {defaults[section][key]}"


@pytest.mark.parametrize(
    "yaml_text, expected",
    [
        # an unknown key: named, with what is allowed in its section
        ("runtime:\n  block_tokenz: 32\n",
         "runtime.block_tokenz; did you mean runtime.block_tokens?"),
        # a wrong type: no coercion of "64" to 64
        ("runtime:\n  block_tokens: '64'\n", "runtime.block_tokens: must be an integer (got '64')"),
        # out of range
        ("scheduler:\n  ahaz_alpha: 1.5\n", "scheduler.ahaz_alpha: must be <= 1.0 (got 1.5)"),
        ("hbf:\n  ann_index_type: FOO\n",
         "hbf.ann_index_type: must be one of IVF_SQ, IVF_PQ, HNSW (got 'FOO')"),
    ],
)
def test_schema_errors_name_the_key_the_reason_and_the_value(tmp_path, yaml_text, expected):
    path = tmp_path / "h3_config.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError) as err:
        Settings.load(path)
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)


def test_every_bad_key_is_named_at_once_and_sections_may_be_empty():
    with pytest.raises(ConfigError) as err:
        Settings.parse({"runtime": {"block_tokens": 0}, "cold_storage": {"ocr_enabled": "yes"}})
    assert "runtime.block_tokens: must be > 0" in str(err.value)
    assert "cold_storage.ocr_enabled: must be true or false" in str(err.value)
    # `cold_storage:` with every key commented out (YAML null): the defaults
    assert Settings.parse({"cold_storage": None}).cold_storage.ocr_enabled is True
