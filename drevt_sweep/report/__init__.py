"""Figures (``figures``) and the HTML sweep report (``html``, rendered from ``templates/``)."""
