"""Credential-shaped strings for the redaction tests: realistic shapes, none of them
real (the AWS pair is AWS's documented example, the rest are made up)."""

OPENAI_KEY = "sk-proj-Zq3vN8wX1yB5cD7eF9gH" + "T3BlbkFJ" + "kL2mN4pQ6rS8tU0vW1xY"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_TOKEN = "ghp_" + "R7kPq2Wm9Xv4Ls8Tn3Yb6Hc1Jd5Fg0Aa2Bb3"
PASSWORD = "Tr0ub4dor&3-horse"
PEM_BODY = "MIIEowIBAAKCAQEAy8Dbv8prpJ/0kKhlGeJYozo2t60EG8L0561g13R29LvMR5hy"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    f"{PEM_BODY}\n"
    "vRO2ZQXSM7LxxzcAIYBnHwIDAQABAoIBAQCx8Z3YqN0QXfYtGRuh7X1d8lPuHZMk\n"
    "-----END RSA PRIVATE KEY-----"
)
SLACK_TOKEN = "xoxb-123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx".lower()
STRIPE_KEY = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
URL_PASSWORD = "s3cr3t-Pa55"

# The five kinds of issue 27, in one prompt as a user might paste them.
FIVE_KINDS_PROMPT = (
    "Deploy is failing, here is my setup:\n"
    f"export OPENAI_API_KEY={OPENAI_KEY}\n"
    f"aws_access_key_id = {AWS_KEY_ID}\n"
    f"aws_secret_access_key = {AWS_SECRET}\n"
    f"git remote set-url origin https://x:{GITHUB_TOKEN}@github.com/acme/widgets\n"
    f"DB_PASSWORD={PASSWORD}\n"
    f"and the deploy key:\n{PEM}\n"
    "Why does the nightly import fail after the schema change?"
)
# What must appear nowhere once that prompt is stored.
FIVE_KINDS_SECRETS = (OPENAI_KEY, AWS_KEY_ID, AWS_SECRET, GITHUB_TOKEN, PASSWORD, PEM_BODY)


def written_before_redaction(monkeypatch):
    """Make the writes that follow store text as they did before redaction existed (the
    detector and the private-span cut do nothing), as a database made by an earlier
    release holds it; undo with ``monkeypatch.undo()``."""
    from powercontext import redaction

    monkeypatch.setattr(redaction, "redact", redaction.Redacted)
    monkeypatch.setattr(redaction, "strip_private", redaction.Redacted)


def findings(scope_id=None):
    """{check: [finding, ...]} of every check that found something."""
    from powercontext.maintenance import check

    return {
        result.check: [str(finding) for finding in result.findings]
        for result in check(scope_id=scope_id)
        if result.findings
    }
