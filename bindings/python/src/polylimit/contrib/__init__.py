"""Integrations of polylimit with web frameworks and metrics.

Each module imports only its own framework, so any of them works without the
others installed (``pip install polylimit[fastapi]``, ``[flask]``,
``[django]``, ``[prometheus]``):

- :mod:`polylimit.contrib.http`: what they share (key functions, trusted
  proxies, per-route rules, exempt routes, the failure behaviour). No
  framework needed.
- :mod:`polylimit.contrib.live`: ``LivePolicy``, a policy document with
  its own limits and plans, reloaded while the service runs (a watched
  file), with a plan resolver; every integration takes it as a policy.
- :mod:`polylimit.contrib.asgi`: ``RateLimitMiddleware`` for any ASGI app
  (Starlette, FastAPI), and ``CountWhenMiddleware``, which the FastAPI
  dependency's ``count_when`` needs.
- :mod:`polylimit.contrib.fastapi`: ``RateLimit``, a FastAPI dependency.
- :mod:`polylimit.contrib.flask`: ``FlaskRateLimit``, a Flask extension.
- :mod:`polylimit.contrib.django`: ``RateLimitMiddleware``, configured in
  ``settings.POLYLIMIT``.
- :mod:`polylimit.contrib.prometheus`: ``PolylimitCollector`` for
  prometheus_client.

The HTTP headers are always the core's (``decision.headers()``): the same
names and values in every language. docs/integrations/python.md has the guide.
"""
