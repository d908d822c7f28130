"""The protocol client of the load tests (harness/protocol_client.py) against the lab's server, no browser: it
fails when a Streamlit upgrade moves the messages the client reads or sends."""

import asyncio
import re
import time
from concurrent.futures import ThreadPoolExecutor

from harness.protocol_client import StreamlitSession

SEED = 4242  # a run of this test's own: no other test's session joins it
TASK = "copy"  # not the Train page's default task: the picker's select box took the value sent


async def train_once(url: str, polls: bool = True, seed: int = SEED) -> tuple[StreamlitSession, float]:
    async with StreamlitSession(url, polls) as session:
        await session.open("", timeout_s=90)
        assert "train" in session.pages, session.pages  # the app's navigation, by url path
        await session.open("train", timeout_s=90)
        assert any(text == "Train a Transformer" for text in session.texts.values()), session.texts
        await session.choose("train_task", TASK, timeout_s=90)
        session.set("train_seed", seed)
        clicked = time.perf_counter()
        await session.click("start_training")
        await session.wait_for_text("Finished after", timeout_s=120)
        return session, clicked


def test_a_session_without_a_browser_trains_a_run_and_polls_it_to_its_end(lab_server):
    with ThreadPoolExecutor(1) as thread:  # a loop of its own: Playwright's sync API keeps one running on this thread
        session, clicked = thread.submit(asyncio.run, train_once(lab_server.url)).result()
    page = "\n".join(session.texts.values())
    # the run the click started, of the task this session chose and with the seed it set (its summary line)
    assert any(text.startswith(TASK) and f"seed {SEED}" in text for text in session.texts.values()), page
    assert re.search(r"Finished after \d+ steps", page)
    assert sum(t > clicked for t in session.sent_at) >= 2, "the run's live view never polled on its own timer"
    assert not session.exceptions, session.exceptions
    assert "Traceback" not in lab_server.log_text()


def test_a_page_that_never_polls_hears_of_its_run_s_end_when_the_run_ends(lab_server):
    """The server reruns a watching page as its run ends (`page_waker`): the finished line reaches a page at once,
    not at its next poll, here one that never polls at all."""
    with ThreadPoolExecutor(1) as thread:
        session, clicked = thread.submit(asyncio.run, train_once(lab_server.url, polls=False, seed=SEED + 1)).result()
    assert re.search(r"Finished after \d+ steps", "\n".join(session.texts.values()))
    assert sum(t > clicked for t in session.sent_at) == 1, "the page asked the server for news after Start's click"
    assert not session.exceptions, session.exceptions
