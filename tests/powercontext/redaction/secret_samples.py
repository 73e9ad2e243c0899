"""Credential-shaped strings for the redaction tests: realistic shapes, none of them
real (made up, most of them generated from a fixed seed so that the source holds no
token-shaped literal). ``SECRETS`` is the coverage corpus (issue 38: at least 100
formats a secret reaches a prompt or a note in) and ``LEGITIMATE`` the texts about
code that must come out byte for byte as they went in."""

import base64
import random
import string
from urllib.parse import quote

OPENAI_KEY = "sk-proj-Zq3vN8wX1yB5cD7eF9gH" + "T3BlbkFJ" + "kL2mN4pQ6rS8tU0vW1xY"
# Not AWS's documented example pair (AKIAIOSFODNN7EXAMPLE ...): that one is left alone.
AWS_KEY_ID = "AKIA" + "Q3ZV7LXK2M4N8P5R"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9T2QmKw8n"
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


_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "_-"


def _token(seed: int, length: int, alphabet: str = _ALNUM) -> str:
    """``length`` characters drawn from ``alphabet``, the same for the same seed."""
    generator = random.Random(seed)
    return "".join(generator.choice(alphabet) for _ in range(length))


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# (label, text as it would reach a prompt or a note, the secret that must not survive).
_GITHUB_PAT = "github_pat_" + _token(1, 22) + "_" + _token(2, 59)
_ANTHROPIC = "sk-ant-api03-" + _token(3, 93, _URLSAFE) + "AA"
_OPENAI_PROJ = "sk-proj-" + _token(4, 40, _URLSAFE) + "T3BlbkFJ" + _token(5, 40, _URLSAFE)
_GOOGLE = "AIza" + _token(6, 35, _URLSAFE)
_HF = "hf_" + _token(7, 34, string.ascii_letters)
_NPM = "npm_" + _token(8, 36)
_VAULT = "hvs." + _token(9, 90, _URLSAFE)
_DIGITALOCEAN = "dop_v1_" + _token(10, 64, _HEX)
_SHOPIFY = "shpat_" + _token(11, 32, _HEX)
_AZURE_CLIENT = _token(12, 3) + "8Q~" + _token(13, 34, _ALNUM + "_~.-")
_TWILIO_SID = "SK" + _token(14, 32, _HEX)
_TWILIO_AUTH = _token(15, 32, _HEX)
_STS = "FwoGZXIvYXdzE" + _token(16, 300, _B64)
_SLACK_BOT = (
    "xoxb-"
    + _token(17, 12, string.digits)
    + "-"
    + _token(18, 13, string.digits)
    + "-"
    + _token(19, 24)
)
_SLACK_HOOK = (
    "https://hooks.slack.com/services/T"
    + _token(20, 8, string.ascii_uppercase)
    + "/B"
    + _token(21, 8, string.ascii_uppercase)
    + "/"
    + _token(22, 24)
)
_STRIPE_LIVE = "sk_live_" + _token(23, 24)
_STRIPE_RESTRICTED = "rk_live_" + _token(24, 24)
_STRIPE_WEBHOOK = "whsec_" + _token(25, 32)
_SENDGRID = "SG." + _token(26, 22, _URLSAFE) + "." + _token(27, 43, _URLSAFE)
_GITLAB = "glpat-" + _token(28, 20, _URLSAFE)
_GHO = "gho_" + _token(29, 36)
_PYPI = "pypi-AgEIcHlwaS5vcmc" + _token(30, 60, _URLSAFE)
_DOCKERHUB = "dckr_pat_" + _token(31, 27, _URLSAFE)
_DATABRICKS = "dapi" + _token(32, 32, _HEX)
_GROQ = "gsk_" + _token(33, 52)
_REPLICATE = "r8_" + _token(34, 37)
_TELEGRAM = _token(35, 10, string.digits) + ":AA" + _token(36, 33, _URLSAFE)
_DISCORD_HOOK = (
    "https://discord.com/api/webhooks/"
    + _token(37, 18, string.digits)
    + "/"
    + _token(38, 68, _URLSAFE)
)
_POSTMAN = "PMAK-" + _token(39, 24, _HEX) + "-" + _token(40, 34, _HEX)
_LINEAR = "lin_api_" + _token(41, 40)
_GCP_OAUTH = "GOCSPX-" + _token(42, 28, _URLSAFE)
_MAILGUN = "key-" + _token(43, 32, _HEX)
_MAILCHIMP = _token(44, 32, _HEX) + "-us14"
_NEWRELIC = "NRAK-" + _token(45, 27, string.ascii_uppercase + string.digits)
_SUPABASE = "sbp_" + _token(46, 40, _HEX)
_GRAFANA = "glsa_" + _token(47, 32) + "_" + _token(48, 8, _HEX)
_SENTRY = "sntrys_" + _token(49, 120, _URLSAFE)
_ATLASSIAN = "ATATT3xFfGF0" + _token(50, 180, _URLSAFE)
_AGE = "AGE-SECRET-KEY-1" + _token(51, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
_AZURE_STORAGE = _token(52, 86, _B64) + "=="
_JWT_REAL = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IjE2In0."
    + "eyJ"
    + _token(53, 120, _URLSAFE)
    + "."
    + _token(54, 86, _URLSAFE)
)
_ASIA = "ASIA" + _token(55, 16, string.ascii_uppercase + string.digits)
_AWS_SECRET_2 = _token(56, 40, _B64)
_HEROKU = "HRKU-" + _token(57, 60, _URLSAFE)
_FIGMA = "figd_" + _token(58, 43, _URLSAFE)
_NOTION = "ntn_" + _token(59, 46)
_DOPPLER = "dp.st.dev."[:6] + _token(60, 43)
_PULUMI = "pul-" + _token(61, 40, _HEX)
_XAI = "xai-" + _token(62, 80)
_PPLX = "pplx-" + _token(63, 48)
_SQUARE = "sq0atp-" + _token(64, 22, _URLSAFE)
_ALIBABA = "LTAI" + _token(65, 20)
_HF_ORG = "api_org_" + _token(66, 34, string.ascii_letters)
_RUBYGEMS = "rubygems_" + _token(67, 48, _HEX)
_SSH_KEY_BODY = _token(68, 64, _B64)
_OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    f"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n{_SSH_KEY_BODY}\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
_EC_BODY = _token(69, 64, _B64)
_EC = f"-----BEGIN EC PRIVATE KEY-----\n{_EC_BODY}\n-----END EC PRIVATE KEY-----"
_PGP_BODY = _token(70, 64, _B64)
_PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    f"{_PGP_BODY}\n=Ab1c\n-----END PGP PRIVATE KEY BLOCK-----"
)

_UUID = "-".join(_token(206 + i, n, _HEX) for i, n in enumerate((8, 4, 4, 4, 12)))
_PKCS8 = _token(213, 64, _B64)
_SENDGRID_2 = "SG." + _token(218, 22, _URLSAFE) + "." + _token(219, 43, _URLSAFE)

# Passwords as password policies want them (each holds one of ! $ & * + ; = , ( )).
_POLICY_PASSWORDS = (
    "Winter2025!x",
    "pa$$W0rd9",
    "Tom&Jerry42",
    "St4r*gazer",
    "one+two+3Q",
    "semi;colon7X",
    "eq=ual8Z",
    "com,ma5Yq",
    "par(en)9K",
    "Mix!$&*+;=,()1",
)

SECRETS: tuple[tuple[str, str, str], ...] = (
    # Provider tokens alone, with no keyword beside them.
    ("github fine-grained pat", f"use {_GITHUB_PAT} for the API", _GITHUB_PAT),
    ("github classic pat", f"token {GITHUB_TOKEN} for the CI", GITHUB_TOKEN),
    ("github oauth token", f"the app got {_GHO} back", _GHO),
    ("anthropic key", f"I set {_ANTHROPIC} in the agent config", _ANTHROPIC),
    ("openai project key", f"client = OpenAI() # {_OPENAI_PROJ}", _OPENAI_PROJ),
    ("openai key in export", f"export OPENAI_API_KEY={OPENAI_KEY}", OPENAI_KEY),
    ("google api key", f"maps is called with {_GOOGLE} from the browser", _GOOGLE),
    ("google oauth client secret", f"client {_GCP_OAUTH} for the consent screen", _GCP_OAUTH),
    ("huggingface token", f"huggingface-cli login --token {_HF}", _HF),
    ("huggingface org token", f"org token {_HF_ORG}", _HF_ORG),
    ("npm token", f"npm publish failed with {_NPM}", _NPM),
    ("vault token", f"vault login {_VAULT}", _VAULT),
    ("digitalocean token", f"doctl auth init -t {_DIGITALOCEAN}", _DIGITALOCEAN),
    ("shopify token", f"X-Shopify-Access-Token {_SHOPIFY}", _SHOPIFY),
    ("azure client secret", f"the app registration secret is {_AZURE_CLIENT}", _AZURE_CLIENT),
    ("twilio api key sid", f"twilio api key {_TWILIO_SID}", _TWILIO_SID),
    ("aws access key id", f"aws_access_key_id = {AWS_KEY_ID}", AWS_KEY_ID),
    ("aws temporary key id", f"the role gave {_ASIA}", _ASIA),
    ("aws secret in ini", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws secret quoted env", f'AWS_SECRET_ACCESS_KEY="{_AWS_SECRET_2}"', _AWS_SECRET_2),
    ("aws sts session token", f"aws_session_token = {_STS}", _STS),
    ("aws sts session token alone", f"the session token {_STS} expired", _STS),
    ("slack bot token", f"slack {_SLACK_BOT}", _SLACK_BOT),
    ("slack webhook", f"curl -X POST {_SLACK_HOOK} -d @msg.json", _SLACK_HOOK[-24:]),
    ("stripe live key", f"stripe {STRIPE_KEY}", STRIPE_KEY),
    ("stripe live key 2", f"Stripe.api_key = '{_STRIPE_LIVE}'", _STRIPE_LIVE),
    ("stripe restricted key", f"use {_STRIPE_RESTRICTED} in the worker", _STRIPE_RESTRICTED),
    ("stripe webhook secret", f"endpoint secret {_STRIPE_WEBHOOK}", _STRIPE_WEBHOOK),
    ("sendgrid key", f"mail via {_SENDGRID}", _SENDGRID),
    ("gitlab pat", f"git clone https://oauth2:{_GITLAB}@gitlab.com/g/p.git", _GITLAB),
    ("pypi token", f"twine upload -u __token__ -p {_PYPI} dist/*", _PYPI),
    ("docker hub token", f"echo {_DOCKERHUB} | docker login -u me --password-stdin", _DOCKERHUB),
    ("databricks token", f"DATABRICKS_HOST=x {_DATABRICKS}", _DATABRICKS),
    ("groq key", f"groq {_GROQ}", _GROQ),
    ("replicate token", f"replicate {_REPLICATE}", _REPLICATE),
    ("telegram bot token", f"bot = Bot('{_TELEGRAM}')", _TELEGRAM[3:]),
    ("discord webhook", f"post to {_DISCORD_HOOK}", _DISCORD_HOOK[-68:]),
    ("postman key", f"postman {_POSTMAN}", _POSTMAN),
    ("linear key", f"linear {_LINEAR}", _LINEAR),
    ("mailgun key", f"mailgun {_MAILGUN}", _MAILGUN),
    ("mailchimp key", f"mailchimp {_MAILCHIMP}", _MAILCHIMP),
    ("new relic key", f"newrelic {_NEWRELIC}", _NEWRELIC),
    ("supabase token", f"supabase {_SUPABASE}", _SUPABASE),
    ("grafana token", f"grafana {_GRAFANA}", _GRAFANA),
    ("sentry token", f"sentry-cli uses {_SENTRY}", _SENTRY),
    ("atlassian token", f"jira {_ATLASSIAN}", _ATLASSIAN),
    ("age secret key", f"# {_AGE}", _AGE),
    ("heroku key", f"heroku {_HEROKU}", _HEROKU),
    ("figma token", f"figma {_FIGMA}", _FIGMA),
    ("notion token", f"notion {_NOTION}", _NOTION),
    ("pulumi token", f"pulumi {_PULUMI}", _PULUMI),
    ("xai key", f"grok {_XAI}", _XAI),
    ("perplexity key", f"pplx {_PPLX}", _PPLX),
    ("square token", f"square {_SQUARE}", _SQUARE),
    ("alibaba key", f"aliyun {_ALIBABA}", _ALIBABA),
    ("rubygems key", f"gem push with {_RUBYGEMS}", _RUBYGEMS),
    ("jwt bearer", f"Authorization: Bearer {JWT}", JWT),
    ("jwt alone", f"the id token was {_JWT_REAL}", _JWT_REAL),
    ("rsa private key", f"the deploy key:\n{PEM}\nthanks", PEM_BODY),
    ("openssh private key", f"~/.ssh/id_ed25519:\n{_OPENSSH}", _SSH_KEY_BODY),
    ("ec private key", _EC, _EC_BODY),
    ("pgp private key", _PGP, _PGP_BODY),
    (
        "azure storage connection string",
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={_AZURE_STORAGE};EndpointSuffix=core.windows.net",
        _AZURE_STORAGE,
    ),
    # Keyword assignments, in the formats they come in.
    ("dotenv password", "DB_PASSWORD=Tr0ub4dor&3-horse", "Tr0ub4dor&3-horse"),
    ("dotenv quoted", 'SECRET_KEY="k9#mQ2$vL8!pX4@z"', "k9#mQ2$vL8!pX4@z"),
    ("dotenv twilio auth token", f"TWILIO_AUTH_TOKEN={_TWILIO_AUTH}", _TWILIO_AUTH),
    ("python literal", 'client = Client(api_key="' + _token(71, 32) + '")', _token(71, 32)),
    ("python settings", "SECRET_KEY = 'django-insecure-" + _token(72, 40) + "'", _token(72, 40)),
    (
        "json access token",
        '{"access_token": "' + _token(73, 40) + '", "token_type": "bearer"}',
        _token(73, 40),
    ),
    ("json refresh token", '{"refresh_token":"' + _token(74, 48) + '"}', _token(74, 48)),
    (
        "json client secret",
        '"client_secret": "' + _token(75, 32, _URLSAFE) + '",',
        _token(75, 32, _URLSAFE),
    ),
    ("yaml api token", "service:\n  api_token: " + _token(76, 32), _token(76, 32)),
    ("yaml password quoted", "db:\n  password: 'Qx7!mR2#pL'", "Qx7!mR2#pL"),
    ("yaml password plain", "spring.datasource.password: Zk3pQ9wLm2", "Zk3pQ9wLm2"),
    ("toml token", 'token = "' + _token(77, 36) + '"', _token(77, 36)),
    ("ini password", "[client]\nuser = app\npassword = Hx8vN2qL7z", "Hx8vN2qL7z"),
    ("js object", "const config = { apiKey: '" + _token(78, 30) + "' };", _token(78, 30)),
    ("go struct", 'cfg := Config{Password: "' + "Gp9!vX2mQ7" + '"}', "Gp9!vX2mQ7"),
    ("java field", 'private static final String DB_PASSWORD = "J4v@Secr3t!";', "J4v@Secr3t!"),
    ("php array", "'password' => 'Ph9p\\$ecret42',", "Ph9p\\$ecret42"),
    ("ruby hash", 'config.secret_key_base = "' + _token(79, 64, _HEX) + '"', _token(79, 64, _HEX)),
    ("shell export", "export PGPASSWORD='Pg!9xQ2v#L'", "Pg!9xQ2v#L"),
    ("go assignment", 'token := "' + _token(80, 40) + '"', _token(80, 40)),
    ("xml password", "<password>Xm1!Secret9q</password>", "Xm1!Secret9q"),
    ("spanish keyword", "contraseña: Sol3ado!2024", "Sol3ado!2024"),
    ("camel case secret", 'clientSecret: "' + _token(81, 34) + '"', _token(81, 34)),
    ("header x-api-key", "X-API-Key: " + _token(82, 32), _token(82, 32)),
    ("k8s secret base64", "data:\n  password: " + _b64("Kube!Pass-771"), _b64("Kube!Pass-771")),
    (
        "docker config auths",
        '{"auths": {"https://index.docker.io/v1/": {"auth": "' + _b64("me:D0cker!Hub7") + '"}}}',
        _b64("me:D0cker!Hub7"),
    ),
    (
        "npmrc auth token",
        "//registry.npmjs.org/:_authToken=" + _token(83, 36, _HEX + "-"),
        _token(83, 36, _HEX + "-"),
    ),
    ("npmrc legacy auth", "_auth=" + _b64("me:Npm!Pass88"), _b64("me:Npm!Pass88")),
    ("pypirc", "[pypi]\nusername = __token__\npassword = " + _PYPI, _PYPI),
    ("netrc", "machine api.example.org login me password N3trc!Pass", "N3trc!Pass"),
    ("netrc on lines", "machine git.internal\n  login ci\n  password N3t!Lines4", "N3t!Lines4"),
    (
        "query string",
        "GET /callback?code=1&access_token=" + _token(84, 40) + "&state=x",
        _token(84, 40),
    ),
    (
        "connection string",
        "Server=db;Database=app;User Id=sa;Password=Sq1!Server;Encrypt=True",
        "Sq1!Server",
    ),
    ("gradle properties", "signing.password=Gr4dle!Sign", "Gr4dle!Sign"),
    # Split over two lines.
    ("value on the next line", "password =\n    'Sp1it!Line-42'", "Sp1it!Line-42"),
    ("yaml block scalar", "api_key: |\n  " + _token(85, 40), _token(85, 40)),
    ("shell continuation", "export API_TOKEN=\\\n" + _token(86, 40), _token(86, 40)),
    (
        "python string continued",
        'SECRET = ("' + _token(87, 20) + '"\n          "' + _token(88, 20) + '")',
        _token(88, 20),
    ),
    # Encoded.
    ("base64 of a github token", "echo " + _b64(GITHUB_TOKEN) + " | base64 -d", _b64(GITHUB_TOKEN)),
    (
        "base64 of an assignment",
        "the blob was " + _b64("DB_PASSWORD=B64!hidden-pw"),
        _b64("DB_PASSWORD=B64!hidden-pw"),
    ),
    (
        "url-encoded credentials",
        "redirect=" + quote("postgres://app:Url!Enc0ded@db/x", safe=""),
        quote("Url!Enc0ded", safe=""),
    ),
    (
        "url-encoded token",
        "next=" + quote("https://x.io/?token=" + _STRIPE_LIVE, safe=""),
        _STRIPE_LIVE,
    ),
    # Credentials in URLs, with the characters password policies require.
    *(
        (
            f"db url with {password}",
            f"DATABASE_URL=postgres://app:{password}@db.internal:5432/app",
            password,
        )
        for password in _POLICY_PASSWORDS
    ),
    ("mongodb srv url", "mongodb+srv://admin:M0ngo!Atlas@cluster0.x.mongodb.net/db", "M0ngo!Atlas"),
    ("redis url no user", "REDIS_URL=redis://:R3dis$ecret@cache:6379/0", "R3dis$ecret"),
    ("amqp url", "amqp://svc:Rabb1t(mq)!@broker:5672/", "Rabb1t(mq)!"),
    (
        "git url with token",
        f"git remote set-url origin https://x:{GITHUB_TOKEN}@github.com/acme/widgets",
        GITHUB_TOKEN,
    ),
    ("url password with at sign", "https://deploy:p@ss!w0rd@artifacts.internal/repo", "p@ss!w0rd"),
    # Command lines.
    ("curl -u", "curl -u admin:Cu7l!Pass https://api.internal/v1/x", "Cu7l!Pass"),
    ("curl --user", "curl --user 'ci:Ci$ecret9' https://x", "Ci$ecret9"),
    ("mysql -p", "mysql -u root -pMy5ql!Root -h db app", "My5ql!Root"),
    ("mysqldump -p quoted", "mysqldump -u backup -p'Dump&Pass1' app > app.sql", "Dump&Pass1"),
    ("sshpass -p", "sshpass -p 'Ssh!Pass77' ssh deploy@host", "Ssh!Pass77"),
    ("redis-cli -a", "redis-cli -h cache -a R3d1sCli!x ping", "R3d1sCli!x"),
    ("docker login -p", "docker login -u me -p D0ck!Login9 registry.internal", "D0ck!Login9"),
    ("--password flag", "psql-wrapper --password Flag!Pass5 --host db", "Flag!Pass5"),
    ("--token= flag", "gh-tool --token=" + _token(89, 40), _token(89, 40)),
    ("PGPASSWORD inline", "PGPASSWORD=Pg1nline! psql -h db -U app", "Pg1nline!"),
    # Headers.
    (
        "basic auth header",
        "Authorization: Basic " + _b64("alice:Bas1c!Auth"),
        _b64("alice:Bas1c!Auth"),
    ),
    (
        "bearer header in curl",
        'curl -H "Authorization: Bearer ' + _token(90, 40) + '" https://x',
        _token(90, 40),
    ),
    ("token scheme header", "Authorization: token " + _token(91, 40, _HEX), _token(91, 40, _HEX)),
    ("bearer alone", "then send Bearer " + _token(92, 32) + " with it", _token(92, 32)),
    # Measured as held out before the detector knew them (19 of 25 were redacted), then
    # kept: they are formats as real as the rest.
    ("gitlab runner token", "token glrt-" + _token(201, 20, _URLSAFE), _token(201, 20, _URLSAFE)),
    ("github app token", "ghs_" + _token(202, 36), _token(202, 36)),
    (
        "openai service account",
        "sk-svcacct-" + _token(203, 60, _URLSAFE),
        _token(203, 60, _URLSAFE),
    ),
    (
        "cloudflare token",
        "CLOUDFLARE_API_TOKEN=" + _token(204, 40, _URLSAFE),
        _token(204, 40, _URLSAFE),
    ),
    ("okta token", "okta_api_token: " + _token(205, 42), _token(205, 42)),
    ("heroku api key (uuid)", "HEROKU_API_KEY=" + _UUID, _UUID),
    ("datadog api key", "DD_API_KEY=" + _token(211, 32, _HEX), _token(211, 32, _HEX)),
    ("jdbc password param", "jdbc:postgresql://db:5432/app?user=app&password=Jd6c!Pw", "Jd6c!Pw"),
    ("sqlalchemy url", "mysql+pymysql://app:Sq!Al(ch)9@db/app", "Sq!Al(ch)9"),
    ("k8s stringData", "stringData:\n  DB_PASS: 'K8s!Str1ng'", "K8s!Str1ng"),
    ("ansible var", "ansible_become_password: Ans1ble!Pw", "Ans1ble!Pw"),
    ("env in docker run", "docker run -e POSTGRES_PASSWORD=D0cker!Env img", "D0cker!Env"),
    ("gh cli env", "GH_TOKEN=ghp_" + _token(212, 36) + " gh pr list", _token(212, 36)),
    ("python kwarg", "psycopg2.connect(host='db', password='Py!Kw4rg')", "Py!Kw4rg"),
    ("pkcs8 key", "-----BEGIN PRIVATE KEY-----\n" + _PKCS8 + "\n-----END PRIVATE KEY-----", _PKCS8),
    ("url-encoded basic header", "Authorization=Basic%20" + _b64("u:Enc!Hdr7"), _b64("u:Enc!Hdr7")),
    (
        "slack user token",
        "xoxp-" + _token(214, 12, string.digits) + "-" + _token(216, 32, _HEX),
        _token(216, 32, _HEX),
    ),
    (
        "azure devops pat",
        "AZURE_DEVOPS_PAT=" + _token(217, 52, "abcdefghijklmnopqrstuvwxyz234567"),
        _token(217, 52, "abcdefghijklmnopqrstuvwxyz234567"),
    ),
    ("sendgrid in json", '{"sendgrid": "' + _SENDGRID_2 + '"}', _SENDGRID_2),
    ("htpasswd -b", "htpasswd -b .htpasswd admin Ht!Pass9", "Ht!Pass9"),
    ("mongo shell -p", "mongosh -u admin -p M0ng0!Sh --authenticationDatabase admin", "M0ng0!Sh"),
    (
        "git credential url",
        "https://oauth2:" + _token(220, 40) + "@git.internal/x.git",
        _token(220, 40),
    ),
    (
        "python headers dict",
        'headers = {"Authorization": "Bearer ' + _token(93, 36) + '"}',
        _token(93, 36),
    ),
)

# Texts about code that name secrets without holding one, documented examples,
# placeholders and test values: stored byte for byte.
LEGITIMATE: tuple[str, ...] = (
    "password = form.cleaned_data['password']",
    "user.set_password(form.cleaned_data['new_password'])",
    "password = request.POST.get('password')",
    "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
    "api_key = os.environ['OPENAI_API_KEY']",
    'SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY")',
    "secret = settings.SECRET_KEY",
    "password = getpass.getpass()",
    "self.password = password",
    "def login(username: str, password: str) -> Token:",
    "if not check_password(password, user.password_hash):",
    "password_min_length: 8",
    "PASSWORD_MIN_LENGTH = 12",
    "token_type: bearer",
    "max_tokens = 4096",
    "primary_key = True",
    "sort_key = lambda item: item.name",
    "The password field must be required; my password is not in here.",
    "Password: see the vault",
    "Rotate the API key every 90 days and store it in the secret manager.",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "stripe.api_key = 'sk_test_placeholder'",
    "STRIPE_SECRET_KEY=sk_test_your_key_here",
    "amqp://guest:guest@localhost:5672/",
    "DATABASE_URL=postgres://postgres:postgres@localhost:5432/app",
    "DATABASE_URL=postgres://user:password@localhost/dbname",
    "DB_PASSWORD=changeme",
    "API_KEY=your-api-key-here",
    "OPENAI_API_KEY=<your-openai-key>",
    "SECRET_KEY=${DJANGO_SECRET_KEY}",
    'password: "{{ vault_db_password }}"',
    "password: ${DB_PASSWORD}",
    "GITHUB_TOKEN=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    'token = ""',
    "password=None",
    "auth: true",
    'apiVersion: v1\nkind: ConfigMap\ndata:\n  password_min_length: "12"\n  token_ttl: 3600',
    "mysql -u root -p app < dump.sql",
    "mkdir -p build && cd build",
    "curl -u $USER:$TOKEN https://api.github.com/user",
    "docker run -u 1000:1000 image",
    "git push -u origin main",
    "ssh -p 2222 deploy@host",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the APCommandLineTool",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "Visit https://docs.example.com/path?query=1 for the API key rotation guide.",
    "https://github.com/acme/widgets/blob/main/src/auth/token_store.py#L42",
    "from django.contrib.auth.hashers import make_password",
    "export PATH=$HOME/.local/bin:$PATH",
    "The migration adds a `password_changed_at` column.",
    "Use `secrets.token_urlsafe(32)` to make a new token.",
    "passwords = [p for p in candidates if len(p) >= 12]",
    "bypass = True",
    "keyboard: us",
    "const token = await getToken({ req });",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "SELECT id, password_hash FROM users WHERE email = %s",
    "redis-cli -h localhost ping",
    "kubectl create secret generic db --from-literal=password=$(cat pw.txt)",
    "api_key: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
    "cache_key = f'user:{user_id}'",
    "session_token = create_session(user)",
    "The test fixture uses password='testpass123' for the admin user.",
    "Error: invalid_grant (refresh_token expired)",
    "`token` is a required argument",
    "pwd = Path.cwd()",
    "old_pwd=$(pwd)",
    # From real project notes (paraphrased): development defaults, elided keys, a
    # signature scheme's name, prose after "password".
    "Local credentials: billing/billing, database billing_dev, host port 5433.",
    "Customers use API keys (`Authorization: Bearer bk_live_...`), stored hashed.",
    "header `Authorization: ACME-HMAC-SHA256 mch_id=...,nonce=...,signature=...`",
    "on our GUI-less CI machine the CLI can't save credentials, the OS password isn't there",
)
