"""Drives a running lab from outside: its server process, Chromium, Streamlit's websocket protocol.

The browser tests (tests/browser/) and the load tests and benchmarks (benchmarks/) share it: `paths` (the repository
and where logs and screenshots go), `server` (`streamlit run` in a child process), `chromium` (Debian's Chromium and
its settings), `page` (reading and driving the app's pages in Playwright), `protocol_client` (a session without a
browser).
"""
