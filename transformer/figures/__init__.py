"""Plotly figures, built by pure functions (data in, `plotly.graph_objects.Figure` out), one module per topic.

The only part of the package that imports plotly.
"""
