"""What the app's pages share: session state, the session's language, the Train form and its controls, charts, the
class seat, views several pages draw, downloads, links, and the one module of Streamlit internals. `pages/` holds
only the pages; the package `transformer/` holds everything none of this draws, and never imports Streamlit."""
