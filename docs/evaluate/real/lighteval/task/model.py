import random

from lighteval.models.abstract_model import LightevalModel
from lighteval.models.model_output import ModelResponse
from lighteval.utils.cache_management import SampleCache


class SeededSampler(LightevalModel):
  def __init__(self, config):
    self.config = config
    self._cache = SampleCache(config)

  @property
  def tokenizer(self):
    return None

  @property
  def add_special_tokens(self):
    return False

  @property
  def max_length(self):
    return 2048

  def greedy_until(self, docs):
    out = []
    for doc in docs:
      rng = random.Random(doc.query)
      gold = doc.choices[doc.gold_index]
      draws = range(doc.num_samples)
      texts = [gold if rng.random() < 0.5 else rng.choice(["7", "x"]) for _ in draws]
      out.append(ModelResponse(text=texts))
    return out

  def loglikelihood(self, docs):
    raise NotImplementedError

  def loglikelihood_rolling(self, docs):
    raise NotImplementedError
