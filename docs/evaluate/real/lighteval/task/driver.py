import sys

import huggingface_hub
import requests


def _offline(url, *args, **kwargs):
  response = requests.Response()
  response.status_code, response.url = 404, url
  return response


requests.get = _offline
huggingface_hub.HfApi.list_models = lambda self, *args, **kwargs: iter(["offline"])
from lighteval.__main__ import app  # noqa: E402

sys.argv[0] = "lighteval"
app()
