"""What groupcoord's HTML pages share: the report's and the live console's components
(:mod:`groupcoord.ui.components`), their stylesheet ``ui.css`` and script ``ui.js``."""
