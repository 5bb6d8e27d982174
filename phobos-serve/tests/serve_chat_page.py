#!/usr/bin/env python3
"""Loads the chat page of a running `phobos serve` in headless Chromium
(Debian's chromium + chromium-driver, through selenium), sends a message,
waits for the streamed answer (and the reasoning shown apart), reloads to
see the conversation kept in the browser, and saves a screenshot.

Usage: serve_chat_page.py URL EXPECTED_REASONING EXPECTED_ANSWER SCREENSHOT.png
"""
import sys
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def main():
    url, reasoning, answer, screenshot = sys.argv[1:5]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # Chromium's profile (tens of MB) goes with the test.
    profile_dir = tempfile.TemporaryDirectory(prefix="phobos-chromium-")
    profile = profile_dir.name
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1000,700"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        box = driver.find_element(By.ID, "input")
        box.send_keys("think about the question")
        driver.find_element(By.ID, "send").click()
        wait = WebDriverWait(driver, 20)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant .content")
                   and d.find_elements(By.CSS_SELECTOR, ".msg.assistant .content")[-1].text == answer)
        # The answer arrived in pieces: the streamed text grew over time.
        seen = driver.execute_script("return window.__phobosDeltas || 0")
        shown_reasoning = driver.find_elements(By.CSS_SELECTOR, ".msg.assistant .reasoning")[-1].text
        assert shown_reasoning == reasoning, shown_reasoning
        assert seen > 1, f"only {seen} deltas: the answer was not streamed"
        user = driver.find_elements(By.CSS_SELECTOR, ".msg.user .content")[-1].text
        assert user == "think about the question", user
        driver.save_screenshot(screenshot)
        # The conversation survives a reload (kept in localStorage).
        driver.refresh()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg")) == 2)
        kept = driver.find_elements(By.CSS_SELECTOR, ".msg.assistant .content")[-1].text
        assert kept == answer, kept
        print(f"ok chat page ({seen} deltas)")
    finally:
        driver.quit()
        profile_dir.cleanup()


if __name__ == "__main__":
    main()
