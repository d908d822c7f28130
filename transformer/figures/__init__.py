"""Plotly figures, built by pure functions (data in, `plotly.graph_objects.Figure` out), one module per topic.

The only part of the package that imports plotly. Every figure speaks the language of the translator it is given
(`tr`, a `transformer.i18n.Translator`; English by default): titles, axes, legends and hover text. Hover templates
are translated whole, with Plotly's own `%{...}` fields passed in as parameters.
"""

from ..i18n import DEFAULT_LANGUAGE, translator

ENGLISH = translator(DEFAULT_LANGUAGE)  # every figure's default translator
