"""Run inside the virtual environment test_pip_install.py makes: `import specdec` from the wheel that
`pip install .` installed there, decode with the bundled models, and print what came out as JSON
(the test compares it with `specdec generate --json`).

  python pip_install_check.py MODELS_DIR PROMPT_TEXT
"""
import json
import os
import sys

import numpy as np
import specdec

models, text = sys.argv[1], sys.argv[2]
target = specdec.load_model(os.path.join(models, "target"))
eagle3 = specdec.load_drafter(os.path.join(models, "eagle3"), target)
runs = {
    "sequential": specdec.generate(target, text, max_new_tokens=20),
    "eagle3": specdec.generate(target, text, drafter=eagle3, k=4, max_new_tokens=20),
    "draft_sample": specdec.generate(target, text, method="draft", drafter=os.path.join(models, "draft"), k=3,
                                     sampling="sample", temperature=0.8, seed=11, max_new_tokens=20),
}
for name, g in runs.items():
    # numpy is a runtime dependency of the wheel, and tokens come back as int32 arrays.
    assert isinstance(g.tokens, np.ndarray) and g.tokens.dtype == np.int32, (name, type(g.tokens))
print(json.dumps({
    "module": specdec._core.__file__,
    "numpy": np.__version__,
    "runs": {name: {"tokens": g.tokens.tolist(), "text": g.text, "steps": g.steps} for name, g in runs.items()},
}))
