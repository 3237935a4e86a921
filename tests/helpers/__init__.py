"""Code the tests share: scripted engines, a fake OpenAI-compatible provider, child processes, the
explorer in a browser. No test module imports another; what two need lives here."""
