"""Stand-in for torchaudio in the CPU training environment (see docker/train-cpu.txt).

LLaMA-Factory 0.9.5 imports torchaudio at the top of its multimodal data module, for audio
datasets only; PyPI's torchaudio wheels cannot load beside torch's CPU build. EvoSyn trains on
text, so this module lets the import succeed and fails in one line if audio is ever loaded.
"""

from typing import Any, NoReturn

__version__ = "0.0.0+evosyn.stand-in"


def _missing(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise RuntimeError(
        "torchaudio is a stand-in in this training environment (make train-env): audio "
        "datasets need a torchaudio build that matches torch"
    )


load = _missing


class functional:
    """The one function of torchaudio.functional that LLaMA-Factory calls."""

    resample = staticmethod(_missing)
