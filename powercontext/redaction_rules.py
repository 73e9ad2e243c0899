"""The credential shapes :mod:`powercontext.redaction` looks for, as data.

Provider tokens are recognised by their fixed prefixes, as gitleaks' and trufflehog's
rule sets do (the prefixes and lengths below follow gitleaks' default configuration,
MIT-licensed, and the providers' own documentation). They are written here rather than
loaded from a package because every pattern must run in time linear in the text on any
input (a request path redacts up to 200,000 characters an agent or a user chose), which
neither detect-secrets' patterns nor the Python ports of those rule sets promise: each
pattern below starts with a literal prefix behind a boundary that the token's own
characters cannot satisfy (so only one attempt starts in any run of them), and every
repetition is bounded and possessive (so no attempt backtracks). The tests check the
form of each pattern (``test_every_rule_is_bounded_and_possessive``) and the time on
adversarial input.

Each rule: (kind, hint, pattern[, back]). ``hint`` is a lower-case literal every match
holds; a text without it is not searched with the pattern.
"""

# A repetition is possessive (``{m,n}+``) unless what follows it could be taken by it;
# then it is bounded, and backtracks at most that far. No pattern starts with a
# look-behind: a pattern that starts with a literal is searched for as fast as
# ``str.find`` (a look-behind first makes the engine try every position, 25 times slower
# on prose). The boundary before a token (no token character, ``[A-Za-z0-9_-]``, just
# before it, so only one attempt starts in a run of them) is checked by the caller; a
# pattern anchored on a literal in its middle says with ``back`` how many characters
# before the match belong to the token.
# A token may not be followed by one of its characters (a longer run is not this token).
_E = r"(?![A-Za-z0-9_-])"

TOKEN_RULES: tuple[tuple[str, str, str] | tuple[str, str, str, int], ...] = (
    # Cloud providers.
    (
        "aws-access-key-id",
        "",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?<![A-Z0-9][\s\S]{4})[A-Z0-9]{16}+(?![A-Z0-9])",
    ),
    # AWS STS session tokens: base64 of a fixed header.
    (
        "aws-session-token",
        "",
        r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu|FQoGZXIvYXdz)(?<![A-Za-z0-9+/][\s\S]{12})[A-Za-z0-9+/]{40,4096}+={0,2}+",
    ),
    ("google-api-key", "aiza", r"AIza[A-Za-z0-9_-]{35}+" + _E),
    ("google-oauth-secret", "gocspx-", r"GOCSPX-[A-Za-z0-9_-]{28}+" + _E),
    (
        "azure-client-secret",
        "q~",
        r"(?<=[A-Za-z0-9_~.]{3}\d)Q~[A-Za-z0-9_~.-]{31,34}+(?![A-Za-z0-9_~.-])",
        4,
    ),
    ("azure-storage-key", "accountkey", r"(?i:AccountKey)=([A-Za-z0-9+/]{86}+==)"),
    ("digitalocean-token", "_v1_", r"do[por]_v1_[a-f0-9]{64}+" + _E),
    ("heroku-key", "hrku-", r"HRKU-[A-Za-z0-9_-]{60}+" + _E),
    ("alibaba-access-key", "ltai", r"LTAI[A-Za-z0-9]{20}+" + _E),
    ("databricks-token", "dapi", r"dapi[a-f0-9]{32}+(?:-\d)?+" + _E),
    ("hashicorp-vault-token", "hv", r"hv[sbr]\.[A-Za-z0-9_-]{24,255}+" + _E),
    (
        "terraform-token",
        ".atlasv1.",
        r"(?<=[A-Za-z0-9]{14})\.atlasv1\.[A-Za-z0-9_=-]{60,70}+" + _E,
        14,
    ),
    ("doppler-token", "dp.", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}+" + _E),
    ("pulumi-token", "pul-", r"pul-[a-f0-9]{40}+" + _E),
    ("fly-token", "fo1_", r"fo1_[A-Za-z0-9_-]{43}+" + _E),
    ("supabase-token", "sbp_", r"sbp_[a-f0-9]{40}+" + _E),
    ("vercel-token", "_", r"v(?:cp|ci|ca|cr|ck)_[A-Za-z0-9]{24,64}+" + _E),
    # Code hosting and package registries.
    ("github-token", "gh", r"gh[pousr]_[A-Za-z0-9]{36,255}+" + _E),
    ("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{50,255}+" + _E),
    (
        "gitlab-token",
        "gl",
        r"gl(?:pat|ptt|rt|dt|ft|imt|agent|oas|cbt|soat|ffct)-[A-Za-z0-9_-]{20,64}+" + _E,
    ),
    ("gitlab-token", "gr1348941", r"GR1348941[A-Za-z0-9_-]{20,64}+" + _E),
    ("bitbucket-token", "atbb", r"ATBB[A-Za-z0-9_=.-]{32,64}+" + _E),
    ("atlassian-token", "atatt", r"ATATT3[A-Za-z0-9_=-]{100,300}+" + _E),
    ("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}+" + _E),
    ("pypi-token", "pypi-", r"pypi-AgE[A-Za-z0-9_-]{50,400}+" + _E),
    ("rubygems-token", "rubygems_", r"rubygems_[a-f0-9]{48}+" + _E),
    ("nuget-key", "oy2", r"oy2[a-z0-9]{43}+" + _E),
    ("docker-hub-token", "dckr_pat_", r"dckr_pat_[A-Za-z0-9_-]{27}+" + _E),
    ("postman-key", "pmak-", r"PMAK-[a-f0-9]{24}+-[a-f0-9]{34}+" + _E),
    # AI providers.
    ("anthropic-api-key", "sk-ant-", r"sk-ant-[A-Za-z0-9_-]{32,255}+" + _E),
    ("openai-api-key", "sk-", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,255}+" + _E),
    ("openai-api-key", "t3blbkfj", r"sk-[A-Za-z0-9_-]{8,64}T3BlbkFJ[A-Za-z0-9_-]{8,64}+" + _E),
    ("api-key", "sk-", r"sk-[A-Za-z0-9]{32,64}+" + _E),
    ("huggingface-token", "hf_", r"hf_[A-Za-z0-9]{30,40}+" + _E),
    ("huggingface-token", "api_org_", r"api_org_[A-Za-z0-9]{30,40}+" + _E),
    ("groq-api-key", "gsk_", r"gsk_[A-Za-z0-9]{48,56}+" + _E),
    ("replicate-token", "r8_", r"r8_[A-Za-z0-9]{37}+" + _E),
    ("xai-api-key", "xai-", r"xai-[A-Za-z0-9]{70,90}+" + _E),
    ("perplexity-api-key", "pplx-", r"pplx-[A-Za-z0-9]{40,56}+" + _E),
    # Messaging, payments, SaaS.
    ("slack-token", "xox", r"xox[abposer]-[A-Za-z0-9-]{10,255}+" + _E),
    ("slack-token", "xapp-", r"xapp-\d-[A-Z0-9]{1,16}+-\d{1,16}+-[a-z0-9]{32,64}+" + _E),
    (
        "slack-webhook",
        "hooks.slack.com",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,128}+",
    ),
    (
        "discord-webhook",
        "discord",
        r"discord(?:app)?\.com/api/webhooks/\d{17,20}+/[A-Za-z0-9_-]{60,68}+",
    ),
    ("telegram-token", ":aa", r"(?<=[0-9]{8}):AA[A-Za-z0-9_-]{33}+" + _E, 8),
    ("stripe-key", "k_", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,247}+" + _E),
    ("stripe-webhook-secret", "whsec_", r"whsec_[A-Za-z0-9+/]{32,64}+" + _E),
    ("square-token", "sq0", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}+" + _E),
    ("shopify-token", "shp", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}+" + _E),
    ("sendgrid-key", "sg.", r"SG\.[A-Za-z0-9_-]{22}+\.[A-Za-z0-9_-]{43}+" + _E),
    ("twilio-key", "sk", r"SK[0-9a-fA-F]{32}+(?![A-Za-z0-9])"),
    ("mailgun-key", "key-", r"key-[a-f0-9]{32}+" + _E),
    ("mailchimp-key", "-us", r"(?<=[0-9a-f]{32})-us\d{1,2}+(?![0-9])", 32),
    ("linear-api-key", "lin_api_", r"lin_api_[A-Za-z0-9]{40}+" + _E),
    ("notion-token", "ntn_", r"ntn_[A-Za-z0-9]{40,50}+" + _E),
    ("figma-token", "figd_", r"figd_[A-Za-z0-9_-]{40,50}+" + _E),
    ("grafana-token", "gl", r"gl(?:sa|c)_[A-Za-z0-9_+/=-]{32,400}+" + _E),
    ("sentry-token", "sntr", r"sntry[su]_[A-Za-z0-9_+/=-]{40,400}+" + _E),
    ("newrelic-key", "nrak-", r"NRAK-[A-Z0-9]{27}+" + _E),
    ("dynatrace-token", "dt0c01.", r"dt0c01\.[A-Z0-9]{24}+\.[A-Z0-9]{64}+" + _E),
    (
        "age-secret-key",
        "age-secret-key-1",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}+",
    ),
    ("airtable-token", "pat", r"pat[A-Za-z0-9]{14}+\.[a-f0-9]{64}+" + _E),
    (
        "jwt",
        "eyj",
        r"eyJ[A-Za-z0-9_-]{8,4096}+\.eyJ[A-Za-z0-9_-]{8,8192}+\.[A-Za-z0-9_-]{8,2048}+" + _E,
    ),
)

# Values no one would mind being seen: documented examples and obvious stand-ins. A
# detected value holding one of these (lower-cased) is left as it is.
PLACEHOLDER_WORDS = (
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "your_",
    "your-",
    "yourpass",
    "yoursecret",
    "yourtoken",
    "xxxx",
    "****",
    "...",
    "redacted",
    "dummy",
    "sample",
    "fake",
    "mock",
    "notreal",
    "not-a-real",
    "not_a_real",
    "insert",
    "replace",
    "todo",
    "fixme",
)

# Whole values that are a stand-in, not a secret (lower-cased).
PLACEHOLDER_VALUES = frozenset(
    (
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "test",
        "testing",
        "guest",
        "admin",
        "root",
        "user",
        "username",
        "default",
        "empty",
        "required",
        "optional",
        "string",
        "str",
        "bytes",
        "self",
        "unset",
        "hidden",
        "masked",
    )
)

# Documented sample tokens (byte for byte) that look real: jwt.io's debugger sample and
# AWS's documented key pair ("EXAMPLE" already places those).
DOCUMENTED_SAMPLES = frozenset(
    (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
        "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
        "IiwiYWRtaW4iOnRydWUsImlhdCI6MTUxNjIzOTAyMn0.KMUFsIDTnFmyG3nMiGM6H9FNFUROf3wh7SmqJp-QV30",
    )
)

# The last word of a key that names a secret (``DB_PASSWORD``, ``apiToken``); ``key``
# counts only after one of KEY_QUALIFIERS (``api_key``, ``secretKey``; not
# ``primary_key`` or ``sort_key``).
PASSWORD_WORDS = frozenset(
    ("password", "passwd", "pwd", "pass", "passphrase", "passcode", "pgpassword", "mysqlpwd")
)
SECRET_WORDS = frozenset(
    (
        "secret",
        "token",
        "apikey",
        "accesskey",
        "secretkey",
        "privatekey",
        "credentials",
        "credential",
        "auth",
        "authtoken",
        "accesstoken",
        "refreshtoken",
        "apitoken",
        "sessiontoken",
        "clientsecret",
        "pat",
        "contraseña",
        "contrasena",
    )
)
KEY_QUALIFIERS = frozenset(
    (
        "api",
        "access",
        "secret",
        "private",
        "signing",
        "encryption",
        "master",
        "license",
        "app",
        "client",
        "auth",
        "account",
        "subscription",
        "service",
        "shared",
        "consumer",
        "webhook",
        "hmac",
        "jwt",
        "session",
    )
)
