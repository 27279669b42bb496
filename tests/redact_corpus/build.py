"""Writes secrets.jsonl and lookalikes.jsonl beside this file (see README.md).

    .venv/bin/python tests/redact_corpus/build.py

Every secret value is synthetic: random characters of the shape a provider uses (the shapes
of gitleaks' rules and detect-secrets' plugins), drawn from a seeded generator, so the files
are the same on every run. None is, or was, a real credential.
"""
from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
R = random.Random(14)

LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
ALNUM = LOW + UP + DIG
LOWNUM = LOW + DIG
UPNUM = UP + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64U = ALNUM + "-_"


def rnd(n: int, alphabet: str = ALNUM) -> str:
    """n random characters; random-looking ones always hold a digit and both cases
    (as any real 20+ character key does) when the alphabet allows."""
    while True:
        s = "".join(R.choice(alphabet) for _ in range(n))
        if alphabet in (ALNUM, B64, B64U) and n >= 16 and not (
                any(c.isdigit() for c in s) and any(c.islower() for c in s) and any(c.isupper() for c in s)):
            continue
        return s


def b64bytes(n: int) -> str:
    return base64.b64encode(R.randbytes(n)).decode()


def uuid() -> str:
    h = rnd(32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


SECRETS: list[dict[str, str]] = []


def s(form: str, rule: str, text: str, secret: str) -> None:
    assert secret in text, (form, text, secret)
    SECRETS.append({"text": text, "secret": secret, "form": form, "rule": rule})


# ============================================================================ provider prefixes
def providers() -> None:
    k = "AKIA" + rnd(16, UPNUM)
    s("aws access key id (env)", "aws-access-token", f"AWS_ACCESS_KEY_ID={k}", k)
    k = "ASIA" + rnd(16, UPNUM)
    s("aws sts key id (json)", "aws-access-token", f'{{"AccessKeyId": "{k}", "Expiration": "2025-06-01T10:00:00Z"}}', k)
    k = "ABIA" + rnd(16, UPNUM)
    s("aws key id in prose", "aws-access-token", f"the build uses {k} for the upload step", k)
    k = "ACCA" + rnd(16, UPNUM)
    s("aws key id in csv", "aws-access-token", f"ci-user,{k},Active,2024-11-02", k)
    k = "ABSK" + rnd(132, B64)
    s("aws bedrock api key", "aws-amazon-bedrock-api-key-long-lived", f"export AWS_BEARER_TOKEN_BEDROCK={k}", k)
    k = "IQoJb3JpZ2luX2VjE" + rnd(300, B64) + "=="
    s("aws session token (credentials file)", "issue14", f"aws_session_token = {k}", k)
    k = "FwoGZXIvYXdzE" + rnd(200, B64)
    s("aws session token (json)", "issue14", f'"SessionToken": "{k}",', k)

    k = "ghp_" + rnd(36)
    s("github classic pat", "github-pat", f"git clone https://{k}@github.com/acme/infra.git", k)
    k = "gho_" + rnd(36)
    s("github oauth token", "github-oauth", f"oauth_token: {k}\n  user: octocat", k)
    k = "ghu_" + rnd(36)
    s("github app user token", "github-app-token", f"Authorization: token {k}", k)
    k = "ghs_" + rnd(36)
    s("github app installation token", "github-app-token", f"https://x-access-token:{k}@github.com/acme/app", k)
    k = "ghr_" + rnd(76)
    s("github refresh token", "github-refresh-token", f'{{"refresh_token":"{k}","expires_in":15811200}}', k)
    k = "github_pat_" + rnd(22) + "_" + rnd(59)
    s("github fine-grained pat", "github-fine-grained-pat", f"echo {k} | gh auth login --with-token", k)

    for prefix, n, rule in (("glpat-", 20, "gitlab-pat"), ("gldt-", 20, "gitlab-deploy-token"),
                            ("glrt-", 20, "gitlab-runner-authentication-token"), ("glptt-", 40, "gitlab-ptt"),
                            ("glft-", 20, "gitlab-feed-token"), ("glimt-", 25, "gitlab-incoming-mail-token"),
                            ("glagent-", 50, "gitlab-kubernetes-agent-token"), ("gloas-", 64, "gitlab-oauth-app-secret"),
                            ("glsoat-", 20, "gitlab-scim-token"), ("glffct-", 20, "gitlab-feature-flag-client-token")):
        alpha = HEX if prefix == "glptt-" else ALNUM + "_-"
        k = prefix + rnd(n, alpha)
        s(f"gitlab {prefix} token", rule, f"GITLAB_TOKEN='{k}'" if prefix == "glpat-" else f"token: {k}", k)
    k = "glcbt-" + rnd(2, HEX) + "_" + rnd(20)
    s("gitlab ci job token", "gitlab-cicd-job-token", f"curl --header 'JOB-TOKEN: {k}' https://gitlab.example.com/api/v4/jobs", k)
    k = "GR1348941" + rnd(20)
    s("gitlab runner registration token", "gitlab-rrt", f"gitlab-runner register --registration-token {k}", k)
    k = rnd(32, LOWNUM)
    s("gitlab session cookie", "gitlab-session-cookie", f"Cookie: _gitlab_session={k}; event_filter=all", k)

    k = "sk-ant-api03-" + rnd(93, ALNUM + "_-") + "AA"
    s("anthropic api key", "anthropic-api-key", f"ANTHROPIC_API_KEY={k}", k)
    k = "sk-ant-admin01-" + rnd(93, ALNUM + "_-") + "AA"
    s("anthropic admin key", "anthropic-admin-api-key", f'client = Anthropic(api_key="{k}")', k)
    k = "sk-proj-" + rnd(74, ALNUM + "_-") + "T3BlbkFJ" + rnd(74, ALNUM + "_-")
    s("openai project key", "openai-api-key", f"OPENAI_API_KEY={k}", k)
    k = "sk-svcacct-" + rnd(58, ALNUM + "_-") + "T3BlbkFJ" + rnd(58, ALNUM + "_-")
    s("openai service account key", "openai-api-key", f"openai.api_key = '{k}'", k)
    k = "sk-" + rnd(20) + "T3BlbkFJ" + rnd(20)
    s("openai legacy key", "openai-api-key", f"I pasted {k} into the notebook", k)
    k = "sk-or-v1-" + rnd(64, HEX)
    s("openrouter key", "issue14", f"OPENROUTER_API_KEY={k}", k)
    k = "sk-" + rnd(32, HEX)
    s("deepseek key", "issue14", f"curl https://api.deepseek.com -H 'Authorization: Bearer {k}'", k)

    k = "xoxb-" + rnd(11, DIG) + "-" + rnd(13, DIG) + "-" + rnd(24)
    s("slack bot token", "slack-bot-token", f"SLACK_BOT_TOKEN={k}", k)
    k = "xoxp-" + rnd(11, DIG) + "-" + rnd(11, DIG) + "-" + rnd(13, DIG) + "-" + rnd(32, HEX)
    s("slack user token", "slack-user-token", f"token={k}", k)
    k = "xoxa-2-" + rnd(40)
    s("slack workspace token", "slack-legacy-workspace-token", f"the legacy token {k} still works", k)
    k = "xoxe.xoxp-1-" + rnd(166, UPNUM)
    s("slack config token", "slack-config-access-token", f"SLACK_CONFIG_TOKEN={k}", k)
    k = "xoxe-1-" + rnd(146, UPNUM)
    s("slack config refresh token", "slack-config-refresh-token", f"refresh: {k}", k)
    k = "xapp-1-" + rnd(11, UPNUM) + "-" + rnd(13, DIG) + "-" + rnd(64, HEX)
    s("slack app token", "slack-app-token", f"SLACK_APP_TOKEN={k}", k)
    k = "T" + rnd(8, UPNUM) + "/B" + rnd(10, UPNUM) + "/" + rnd(24)
    s("slack webhook url", "slack-webhook-url", f"curl -X POST https://hooks.slack.com/services/{k} -d '{{\"text\":\"deploy done\"}}'", k)
    k = rnd(68, ALNUM + "_-")
    s("discord webhook url", "issue14", f"WEBHOOK=https://discord.com/api/webhooks/{rnd(18, DIG)}/{k}", k)
    k = f"{uuid()}@{uuid()}/IncomingWebhook/{rnd(32, HEX)}/{uuid()}"
    s("teams webhook url", "microsoft-teams-webhook", f"url: https://acme.webhook.office.com/webhookb2/{k}", k)

    for prefix, rule in (("sk_live_", "stripe-access-token"), ("sk_test_", "stripe-access-token"),
                         ("rk_live_", "stripe-access-token")):
        k = prefix + rnd(99)
        s(f"stripe {prefix}", rule, f"stripe.api_key = \"{k}\"" if prefix != "rk_live_" else f"STRIPE_KEY={k}", k)
    k = "whsec_" + rnd(32)
    s("stripe webhook secret", "issue14", f"stripe listen --forward-to localhost:4242 # signing secret is {k}", k)

    k = "AIza" + rnd(35, ALNUM + "_-")
    s("gcp api key", "gcp-api-key", f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={k}", k)
    k = "GOCSPX-" + rnd(28, ALNUM + "_-")
    s("google oauth client secret", "issue14", f'"client_secret":"{k}","redirect_uris":["http://localhost"]', k)
    k = "ya29." + rnd(150, ALNUM + "_-")
    s("google oauth access token", "issue14", f"gcloud auth print-access-token\n{k}", k)

    k = "npm_" + rnd(36)
    s("npm token (.npmrc)", "npm-access-token", f"//registry.npmjs.org/:_authToken={k}", k)
    k = "pypi-AgEIcHlwaS5vcmc" + rnd(160, ALNUM + "_-")
    s("pypi upload token", "pypi-upload-token", f"twine upload -u __token__ -p {k} dist/*", k)
    k = "rubygems_" + rnd(48, HEX)
    s("rubygems api key", "rubygems-api-token", f"---\n:rubygems_api_key: {k}", k)
    k = "CLOJARS_" + rnd(60, LOWNUM)
    s("clojars token", "clojars-api-token", f"export CLOJARS_PASSWORD={k}", k)
    k = "oy2" + rnd(43, LOWNUM)
    s("nuget api key", "issue14", f"dotnet nuget push pkg.nupkg --api-key {k} --source https://api.nuget.org/v3/index.json", k)
    k = "dckr_pat_" + rnd(27, ALNUM + "_-")
    s("docker hub pat", "issue14", f"echo {k} | docker login -u acme --password-stdin", k)

    k = "hf_" + rnd(34, LOW + UP)
    s("huggingface token (--token)", "huggingface-access-token", f"huggingface-cli login --token {k}", k)
    k = "hf_" + rnd(34, LOW + UP)
    s("huggingface token (env)", "huggingface-access-token", f"HF_TOKEN={k} python train.py", k)
    k = "api_org_" + rnd(34, LOW + UP)
    s("huggingface org token", "huggingface-organization-api-token", f"org token: {k}", k)

    table = [
        ("1password secret key", "1password-secret-key", "A3-" + rnd(6, UPNUM) + "-" + rnd(11, UPNUM) + "-" + "-".join(rnd(5, UPNUM) for _ in range(3)), "Secret Key: {k}"),
        ("1password service account token", "1password-service-account-token", "ops_eyJ" + rnd(260, B64), "OP_SERVICE_ACCOUNT_TOKEN={k}"),
        ("adobe client secret", "adobe-client-secret", "p8e-" + rnd(32), "client_secret={k}"),
        ("age secret key", "age-secret-key", "AGE-SECRET-KEY-1" + "".join(R.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58)), "# created: 2024-01-01\n{k}"),
        ("alibaba access key id", "alibaba-access-key-id", "LTAI" + rnd(20), "accessKeyId: {k}"),
        ("artifactory api key", "artifactory-api-key", "AKCp" + rnd(69), "X-JFrog-Art-Api: {k}"),
        ("artifactory reference token", "artifactory-reference-token", "cmVmd" + rnd(59), "ARTIFACTORY_TOKEN={k}"),
        ("atlassian api token", "atlassian-api-token", "ATATT3" + rnd(186, ALNUM + "_-="), "JIRA_API_TOKEN={k}"),
        ("bitbucket app password", "issue14", "ATBB" + rnd(32), "bitbucket app password {k}"),
        ("databricks token", "databricks-api-token", "dapi" + rnd(32, HEX), "DATABRICKS_TOKEN={k}"),
        ("digitalocean pat", "digitalocean-pat", "dop_v1_" + rnd(64, HEX), "doctl auth init -t {k}"),
        ("digitalocean oauth token", "digitalocean-access-token", "doo_v1_" + rnd(64, HEX), "token: {k}"),
        ("digitalocean refresh token", "digitalocean-refresh-token", "dor_v1_" + rnd(64, HEX), "refresh_token={k}"),
        ("doppler token", "doppler-api-token", "dp.pt." + rnd(43), "DOPPLER_TOKEN={k}"),
        ("dynatrace token", "dynatrace-api-token", "dt0c01." + rnd(24, UPNUM) + "." + rnd(64, UPNUM), "Api-Token {k}"),
        ("easypost key", "easypost-api-token", "EZAK" + rnd(54), "EasyPost::Client.new(api_key: '{k}')"),
        ("easypost test key", "easypost-test-api-token", "EZTK" + rnd(54), "key {k}"),
        ("facebook page token", "facebook-page-access-token", "EAAC" + rnd(120), "access_token={k}"),
        ("square access token", "square-access-token", "EAAA" + rnd(60, ALNUM + "_-"), "SQUARE_ACCESS_TOKEN={k}"),
        ("square oauth secret", "square-access-token", "sq0csp-" + rnd(43, ALNUM + "_-"), "square secret {k}"),
        ("flutterwave secret key", "flutterwave-secret-key", "FLWSECK_TEST-" + rnd(32, "abcdefgh0123456789") + "-X", "FLW_SECRET={k}"),
        ("fly.io token", "flyio-access-token", "fo1_" + rnd(43, ALNUM + "_-"), "FLY_API_TOKEN={k}"),
        ("fly.io macaroon", "flyio-access-token", "fm2_" + rnd(140, B64), "fly tokens create deploy\n{k}"),
        ("frame.io token", "frameio-api-token", "fio-u-" + rnd(64, ALNUM + "_-"), "Bearer {k}"),
        ("grafana cloud token", "grafana-cloud-api-token", "glc_" + rnd(80, B64), "GRAFANA_CLOUD_TOKEN={k}"),
        ("grafana service account", "grafana-service-account-token", "glsa_" + rnd(32) + "_" + rnd(8, HEX), "grafana token {k}"),
        ("grafana api key", "grafana-api-key", "eyJrIjoi" + rnd(80), "apiKey: {k}"),
        ("harness pat", "harness-api-key", "pat." + rnd(22, ALNUM + "_-") + "." + rnd(24) + "." + rnd(20), "x-api-key: {k}"),
        ("heroku api key v2", "heroku-api-key-v2", "HRKU-AA" + rnd(58, ALNUM + "_-"), "HEROKU_API_KEY={k}"),
        ("infracost token", "infracost-api-token", "ico-" + rnd(32), "infracost configure set api_key {k}"),
        ("intra42 secret", "intra42-client-secret", "s-s4t2ud-" + rnd(64, HEX), "FT_SECRET={k}"),
        ("linear api key", "linear-api-key", "lin_api_" + rnd(40), "LINEAR_API_KEY={k}"),
        ("new relic user key", "new-relic-user-api-key", "NRAK-" + rnd(27, UPNUM), "NEW_RELIC_API_KEY={k}"),
        ("new relic browser key", "new-relic-browser-api-token", "NRJS-" + rnd(19, HEX), "newrelic browser token {k}"),
        ("new relic insert key", "new-relic-insert-key", "NRII-" + rnd(32, ALNUM + "-"), "insert key {k}"),
        ("notion token", "notion-api-token", "ntn_" + rnd(11, DIG) + rnd(35), "NOTION_TOKEN={k}"),
        ("notion legacy secret", "issue14", "secret_" + rnd(43), "notion = Client(auth=\"{k}\")"),
        ("openshift token", "openshift-user-token", "sha256~" + rnd(43, ALNUM + "_-"), "oc login --token={k} --server=https://api.crc.testing:6443"),
        ("perplexity key", "perplexity-api-key", "pplx-" + rnd(48), "PPLX_API_KEY={k}"),
        ("planetscale token", "planetscale-api-token", "pscale_tkn_" + rnd(43, ALNUM + "_"), "PLANETSCALE_SERVICE_TOKEN={k}"),
        ("planetscale password", "planetscale-password", "pscale_pw_" + rnd(43, ALNUM + "_"), "mysql://u4x9:{k}@aws.connect.psdb.cloud/app"),
        ("postman key", "postman-api-token", "PMAK-" + rnd(24, HEX) + "-" + rnd(34, HEX), "X-Api-Key: {k}"),
        ("prefect key", "prefect-api-token", "pnu_" + rnd(36), "prefect cloud login -k {k}"),
        ("pulumi token", "pulumi-api-token", "pul-" + rnd(40, HEX), "PULUMI_ACCESS_TOKEN={k}"),
        ("readme key", "readme-api-token", "rdme_" + rnd(70, LOWNUM), "README_API_KEY={k}"),
        ("scalingo token", "scalingo-api-token", "tk-us-" + rnd(48, ALNUM + "_-"), "scalingo login --api-token {k}"),
        ("sendgrid key", "sendgrid-api-token", "SG." + rnd(22, ALNUM + "_-") + "." + rnd(43, ALNUM + "_-"), "SENDGRID_API_KEY='{k}'"),
        ("sendinblue key", "sendinblue-api-token", "xkeysib-" + rnd(64, HEX) + "-" + rnd(16), "BREVO_KEY={k}"),
        ("sentry user token", "sentry-user-token", "sntryu_" + rnd(64, HEX), "SENTRY_AUTH_TOKEN={k}"),
        ("sentry org token", "sentry-org-token", "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9LCJyZWdpb25fdXJs" + rnd(40) + "_" + rnd(43), "auth.token={k}"),
        ("settlemint token", "settlemint-personal-access-token", "sm_pat_" + rnd(16), "SETTLEMINT_TOKEN={k}"),
        ("shippo token", "shippo-api-token", "shippo_live_" + rnd(40, HEX), "shippo key {k}"),
        ("shopify access token", "shopify-access-token", "shpat_" + rnd(32, HEX), "X-Shopify-Access-Token: {k}"),
        ("shopify shared secret", "shopify-shared-secret", "shpss_" + rnd(32, HEX), "SHOPIFY_SECRET={k}"),
        ("vault service token", "vault-service-token", "hvs." + rnd(95, ALNUM + "_-"), "export VAULT_TOKEN={k}"),
        ("vault batch token", "vault-batch-token", "hvb." + rnd(150, ALNUM + "_-"), "token {k}"),
        ("cloudflare origin ca key", "cloudflare-origin-ca-key", "v1.0-" + rnd(24, HEX) + "-" + rnd(146, HEX), "X-Auth-User-Service-Key: {k}"),
        ("duffel token", "duffel-api-token", "duffel_test_" + rnd(43, ALNUM + "_-"), "DUFFEL_ACCESS_TOKEN={k}"),
        ("mapbox secret token", "issue14", "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + rnd(20) + "." + rnd(22, ALNUM + "_-"), "MAPBOX_DOWNLOADS_TOKEN={k}"),
        ("groq key", "issue14", "gsk_" + rnd(52), "GROQ_API_KEY={k}"),
        ("replicate token", "issue14", "r8_" + rnd(37), "REPLICATE_API_TOKEN={k}"),
        ("xai key", "issue14", "xai-" + rnd(80), "XAI_API_KEY={k}"),
        ("pinecone key", "issue14", "pcsk_" + rnd(6) + "_" + rnd(60), "pc = Pinecone(api_key=\"{k}\")"),
        ("langsmith key", "issue14", "lsv2_pt_" + rnd(32, HEX) + "_" + rnd(10, HEX), "LANGSMITH_API_KEY={k}"),
        ("nvidia key", "issue14", "nvapi-" + rnd(64, ALNUM + "_-"), "NVIDIA_API_KEY={k}"),
        ("tavily key", "issue14", "tvly-dev-" + rnd(32), "TAVILY_API_KEY={k}"),
        ("supabase token", "issue14", "sbp_" + rnd(40, HEX), "supabase login --token {k}"),
        ("figma token", "issue14", "figd_" + rnd(40, ALNUM + "_-"), "FIGMA_TOKEN={k}"),
        ("tailscale auth key", "issue14", "tskey-auth-" + rnd(17) + "-" + rnd(32), "tailscale up --authkey={k}"),
        ("buildkite token", "issue14", "bkua_" + rnd(40, HEX), "BUILDKITE_API_TOKEN={k}"),
        ("circleci token", "issue14", "CCIPAT_" + rnd(22) + "_" + rnd(40, HEX), "CIRCLE_TOKEN={k}"),
        ("sonarqube token", "sonar-api-token", "squ_" + rnd(40, HEX), "sonar-scanner -Dsonar.token={k}"),
        ("resend key", "issue14", "re_" + rnd(8) + "_" + rnd(24), "RESEND_API_KEY={k}"),
        ("mailgun key", "mailgun-private-api-token", "key-" + rnd(32, HEX), "MAILGUN_API_KEY={k}"),
    ]
    for form, rule, k, tpl in table:
        s(form, rule, tpl.format(k=k), k)
    k = "SK" + rnd(32, HEX)
    s("twilio api key sid (bare)", "twilio-api-key", f"api key {k} created for the sms worker", k)
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + base64.urlsafe_b64encode(
        json.dumps({"sub": rnd(12, DIG), "exp": 1900000000}).encode()).decode().rstrip("=") + "." + rnd(43, ALNUM + "_-"))
    s("jwt", "jwt", f"Authorization: Bearer {jwt}", jwt)
    jwt2 = "eyJ" + rnd(30, ALNUM + "_-") + ".eyJ" + rnd(60, ALNUM + "_-") + "." + rnd(43, ALNUM + "_-")
    s("jwt in a cookie jar", "jwt", f"localhost\tFALSE\t/\tFALSE\t0\taccess\t{jwt2}", jwt2)


# ============================================================================ private keys
def private_keys() -> None:
    def pem(kind: str, nbytes: int = 300) -> tuple[str, str]:
        body = b64bytes(nbytes)
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        return (f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n-----END {kind}-----", lines[1])
    for kind, rule in (("RSA PRIVATE KEY", "private-key"), ("OPENSSH PRIVATE KEY", "private-key"),
                       ("EC PRIVATE KEY", "private-key"), ("PRIVATE KEY", "private-key"),
                       ("ENCRYPTED PRIVATE KEY", "private-key"), ("DSA PRIVATE KEY", "private-key")):
        block, line = pem(kind)
        s(f"pem {kind.lower()}", rule, f"$ cat id_key\n{block}\n", line)
    block, line = pem("PGP PRIVATE KEY BLOCK", 400)
    s("pgp private key block", "private-key", block, line)
    block, line = pem("OPENSSH PRIVATE KEY")
    s("pem in json (escaped newlines)", "private-key", json.dumps({"stdout": block})[1:-1], line)
    block, line = pem("RSA PRIVATE KEY")
    trunc = "\n".join(block.splitlines()[:4])
    s("pem truncated (head -4)", "private-key", f"$ head -4 key.pem\n{trunc}", line)
    block, line = pem("PRIVATE KEY")
    s("gcp service account json", "private-key",
      json.dumps({"type": "service_account", "private_key_id": rnd(40, HEX), "private_key": block + "\n"}), line)
    enc = base64.b64encode(pem("RSA PRIVATE KEY")[0].encode()).decode()
    s("kubernetes tls.key (base64 pem)", "kubernetes-secret-yaml", f"kind: Secret\ndata:\n  tls.key: {enc}", enc[40:100])
    lines = [b64bytes(48) for _ in range(4)]
    s("putty private lines", "issue14",
      "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI\n"
      "Private-Lines: 4\n" + "\n".join(lines) + "\nPrivate-MAC: " + rnd(64, HEX), lines[2])


# ============================================================================ keyword = value
def keywords() -> None:
    kv = [
        ("algolia admin key", "algolia-api-key", "ALGOLIA_ADMIN_API_KEY", rnd(32, LOWNUM)),
        ("datadog app key", "datadog-access-token", "DATADOG_APP_KEY", rnd(40, LOWNUM)),
        ("datadog api key", "datadog-access-token", "DD_API_KEY", rnd(32, HEX)),
        ("twitter bearer", "twitter-bearer-token", "TWITTER_BEARER_TOKEN", "A" * 22 + rnd(90)),
        ("twitter api secret", "twitter-api-secret", "TWITTER_API_SECRET", rnd(50)),
        ("cloudflare api token", "cloudflare-api-key", "CLOUDFLARE_API_TOKEN", rnd(40, ALNUM + "_-")),
        ("heroku api key (uuid)", "heroku-api-key", "HEROKU_API_KEY", uuid()),
        ("mailchimp api key", "mailchimp-api-key", "MAILCHIMP_API_KEY", rnd(32, HEX) + "-us12"),
        ("codecov token", "codecov-access-token", "CODECOV_TOKEN", uuid()),
        ("travis token", "travisci-access-token", "TRAVIS_API_TOKEN", rnd(22)),
        ("netlify token", "netlify-access-token", "NETLIFY_AUTH_TOKEN", rnd(43, ALNUM + "_-")),
        ("launchdarkly sdk key", "launchdarkly-access-token", "LAUNCHDARKLY_SDK_KEY", "sdk-" + uuid()),
        ("okta api token", "okta-access-token", "OKTA_API_TOKEN", "00" + rnd(40, ALNUM + "_-")),
        ("telegram bot token", "telegram-bot-api-token", "TELEGRAM_BOT_TOKEN", rnd(10, DIG) + ":AA" + rnd(33, ALNUM + "_-")),
        ("discord bot token", "discord-api-token", "DISCORD_BOT_TOKEN", "M" + rnd(23) + "." + rnd(6, ALNUM + "_-") + "." + rnd(38, ALNUM + "_-")),
        ("twilio auth token", "issue14", "TWILIO_AUTH_TOKEN", rnd(32, HEX)),
        ("contentful token", "contentful-delivery-api-token", "CONTENTFUL_ACCESS_TOKEN", rnd(43, ALNUM + "_-")),
        ("snyk token", "snyk-api-token", "SNYK_TOKEN", uuid()),
        ("zendesk token", "zendesk-secret-key", "ZENDESK_API_TOKEN", rnd(40)),
        ("yandex api key", "yandex-api-key", "YANDEX_API_KEY", "AQVN" + rnd(36, ALNUM + "_-")),
        ("plaid secret", "plaid-secret-key", "PLAID_SECRET", rnd(30, LOWNUM)),
        ("linkedin client secret", "linkedin-client-secret", "LINKEDIN_CLIENT_SECRET", rnd(16)),
        ("fastly token", "fastly-api-token", "FASTLY_API_TOKEN", rnd(32, ALNUM + "_-")),
        ("rapidapi key", "rapidapi-access-token", "RAPIDAPI_KEY", rnd(50, ALNUM + "_-")),
        ("lob api key", "lob-api-key", "LOB_API_KEY", "live_" + rnd(35, HEX)),
        ("dropbox token", "dropbox-short-lived-api-token", "DROPBOX_ACCESS_TOKEN", "sl." + rnd(135, ALNUM + "_-")),
        ("gocardless token", "gocardless-api-token", "GOCARDLESS_ACCESS_TOKEN", "live_" + rnd(40, ALNUM + "_-")),
        ("typeform token", "typeform-api-token", "TYPEFORM_TOKEN", "tfp_" + rnd(59, ALNUM + "_-")),
        ("cohere key", "cohere-api-token", "CO_API_KEY", rnd(40)),
        ("mistral key", "issue14", "MISTRAL_API_KEY", rnd(32)),
        ("confluent secret", "confluent-secret-key", "CONFLUENT_CLOUD_API_SECRET", rnd(64, ALNUM)),
        ("kraken private key", "kraken-access-token", "KRAKEN_PRIVATE_KEY", rnd(86, B64) + "=="),
        ("bitbucket client secret", "bitbucket-client-secret", "BITBUCKET_CLIENT_SECRET", rnd(32)),
        ("asana pat", "asana-client-secret", "ASANA_ACCESS_TOKEN", "2/" + rnd(16, DIG) + "/" + rnd(16, DIG) + ":" + rnd(32, HEX)),
        ("hubspot key", "hubspot-api-key", "HUBSPOT_API_KEY", uuid().upper()),
        ("sumologic access key", "sumologic-access-token", "SUMO_ACCESS_KEY", rnd(64)),
    ]
    for form, rule, key, val in kv:
        s(form, rule, f"{key}={val}", val)
    generic = [
        ("password= (env)", "generic-api-key", "DB_PASSWORD={v}", rnd(14, ALNUM + "!@#%^&*")),
        ("password in yaml", "generic-api-key", "database:\n  user: app\n  password: {v}\n  host: db", rnd(12) + "!"),
        ("password in json", "generic-api-key", '{{"username": "svc", "password": "{v}"}}', rnd(16)),
        ("password in toml", "generic-api-key", '[db]\npassword = "{v}"', rnd(16)),
        ("password plain word (properties)", "hashicorp-tf-password", "spring.datasource.password={v}", "correcthorsebattery"),
        ("passwd: quoted", "generic-api-key", "passwd: '{v}'", rnd(10) + "&3"),
        ("PGPASSWORD", "generic-api-key", "PGPASSWORD={v} psql -h db -U app", rnd(18)),
        ("python kwarg password", "generic-api-key", 'conn = psycopg.connect(host="db", password="{v}")', rnd(16)),
        ("js object password", "generic-api-key", "const cfg = {{ user: 'admin', password: '{v}' }}", rnd(14)),
        ("secret_key python", "generic-api-key", "SECRET_KEY = '{v}'", rnd(50, ALNUM + "!@#$%^&*(-_=+)")),
        ("rails secret_key_base", "generic-api-key", "secret_key_base: {v}", rnd(128, HEX)),
        ("client_secret yaml", "generic-api-key", "oauth:\n  client_id: web\n  client_secret: {v}", rnd(32)),
        ("api_key json", "generic-api-key", '{{"api_key": "{v}", "region": "eu"}}', rnd(32)),
        ("apiKey js", "generic-api-key", "const client = new Client({{ apiKey: '{v}' }})", rnd(40)),
        ("auth_token ini", "generic-api-key", "[default]\nauth_token = {v}", rnd(40, HEX)),
        ("access_token query", "generic-api-key", "GET /v2/me?access_token={v}&fields=id", rnd(48)),
        ("refresh_token json", "generic-api-key", '{{"refresh_token": "{v}"}}', rnd(64, ALNUM + "_-")),
        ("encryption_key env", "generic-api-key", "ENCRYPTION_KEY={v}", b64bytes(32)),
        ("signing key env", "generic-api-key", "JWT_SIGNING_KEY={v}", rnd(64, HEX)),
        ("master key", "generic-api-key", "masterKey: {v}", rnd(40)),
        ("jwt secret", "generic-api-key", "JWT_SECRET={v}", rnd(48)),
        ("session secret", "generic-api-key", "app.use(session({{ secret: '{v}' }}))", rnd(32)),
        ("webhook secret", "generic-api-key", "GITHUB_WEBHOOK_SECRET={v}", rnd(40, HEX)),
        ("credentials key", "generic-api-key", 'credentials: "{v}"', rnd(40, B64)),
        ("private_key value", "generic-api-key", 'private_key = "{v}"', b64bytes(32)),
        ("nuget ClearTextPassword", "nuget-config-password", '<add key="ClearTextPassword" value="{v}" />', rnd(20)),
        ("maven settings.xml password", "issue14", "<server>\n  <id>nexus</id>\n  <password>{v}</password>\n</server>", rnd(16)),
        ("docker config auth", "issue14", '{{"auths": {{"registry.example.com": {{"auth": "{v}"}}}}}}',
         base64.b64encode(f"ci:{rnd(20)}".encode()).decode()),
        (".npmrc _auth", "issue14", "_auth={v}\nalways-auth=true", base64.b64encode(f"dev:{rnd(16)}".encode()).decode()),
        (".pypirc password", "issue14", "[pypi]\nusername = __token__\npassword = {v}", rnd(40)),
        (".netrc password", "issue14", "machine api.heroku.com\n  login me@example.com\n  password {v}", uuid()),
        (".netrc one line", "issue14", "machine github.com login octocat password {v}", "ghp_" + rnd(36)),
        ("k8s secret data password", "kubernetes-secret-yaml", "kind: Secret\ndata:\n  password: {v}", base64.b64encode(rnd(16).encode()).decode()),
        ("helm --set password", "issue14", "helm install db bitnami/postgresql --set auth.postgresPassword={v}", rnd(16)),
        ("terraform -var", "issue14", "terraform apply -var 'db_password={v}'", rnd(16)),
        ("TF_VAR env", "issue14", "export TF_VAR_db_password={v}", rnd(16)),
        ("vault kv put", "issue14", "vault kv put secret/app password={v}", rnd(16)),
        ("kubectl --from-literal", "issue14", "kubectl create secret generic db --from-literal=password={v}", rnd(16)),
        ("prose: my password is", "issue14", "my password is {v} but it keeps failing", rnd(10) + "9"),
        ("prose: the token is", "issue14", "the token is {v}. can you check why the API rejects it?", rnd(40)),
        ("credentials file", "issue14", "[default]\naws_access_key_id = AKIA{v2}\naws_secret_access_key = {v}", rnd(40, B64)),
        ("STS SecretAccessKey json", "issue14", '"SecretAccessKey": "{v}",', rnd(40, B64)),
        ("AWS_SECRET_ACCESS_KEY env", "issue14", "AWS_SECRET_ACCESS_KEY={v}", rnd(40, B64)),
        ("Pwd in odbc", "issue14", "Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={v};", rnd(16)),
    ]
    for form, rule, tpl, v in generic:
        s(form, rule, tpl.format(v=v, v2=rnd(16, UPNUM)), v)


# ============================================================================ command lines
def commands() -> None:
    pw = lambda: rnd(14) + R.choice("!@#%")  # noqa: E731  # a one-line generator
    forms = [
        ("--password X (space)", "mysql --user=root --password {v} -h db.internal", pw()),
        ("--password=X", "mysqldump --password={v} app > dump.sql", pw()),
        ("--password 'X' quoted", "psql-wrapper --password '{v}' --host db", pw()),
        ("mysql -pX", "mysql -uroot -p{v} app < schema.sql", rnd(14)),
        ("mariadb -pX", "mariadb -u app -p{v} -e 'select 1'", rnd(14)),
        ("docker login -p", "docker login -u deploy -p {v} registry.example.com", pw()),
        ("docker login --password", "docker login --username deploy --password {v} ghcr.io", pw()),
        ("podman login -p", "podman login quay.io -u robot -p {v}", rnd(32, UPNUM)),
        ("helm registry login -p", "helm registry login registry.example.com -u ci -p {v}", pw()),
        ("az login -p", "az login -u admin@example.com -p {v}", pw()),
        ("sshpass -p", "sshpass -p {v} ssh deploy@10.0.0.5 uptime", pw()),
        ("sshpass -p'X'", "sshpass -p'{v}' scp dump.sql backup@nas:/srv", rnd(14)),
        ("redis-cli -a", "redis-cli -h cache -a {v} ping", rnd(24)),
        ("mongosh -p", "mongosh --host db -u admin -p {v} --authenticationDatabase admin", pw()),
        ("curl -u user:pass", "curl -u admin:{v} https://jenkins.example.com/api/json", pw()),
        ("curl --user user:pass", "curl --user deploy:{v} -X POST https://ci.example.com/job/build", rnd(16)),
        ("curl -u 'user:pass'", "curl -s -u 'ci-bot:{v}' https://nexus.example.com/service/rest/v1/status", rnd(16)),
        ("curl --proxy-user", "curl --proxy http://proxy:3128 --proxy-user alice:{v} https://example.com", rnd(12)),
        ("curl --oauth2-bearer", "curl --oauth2-bearer {v} https://api.example.com/me", rnd(40)),
        ("curl -H Authorization", "curl -H \"Authorization: Bearer {v}\" https://api.example.com/v1/items", rnd(40)),
        ("--token X", "vercel deploy --prod --token {v}", rnd(24)),
        ("--token hf_", "huggingface-cli upload org/model . --token {v}", "hf_" + rnd(34, LOW + UP)),
        ("--api-key X", "llm keys set --api-key {v}", rnd(40)),
        ("--client-secret X", "az ad sp login --client-id web --client-secret {v}", rnd(34, ALNUM + "~._-")),
        ("--secret-key X", "s3cmd --access_key=AKIDEXAMPLE --secret-key {v} ls", rnd(40, B64)),
        ("--auth-token X", "ngrok config add-authtoken --auth-token {v}", rnd(27) + "_" + rnd(21)),
        ("aws configure set secret", "aws configure set aws_secret_access_key {v}", rnd(40, B64)),
        ("aws configure set session token", "aws configure set aws_session_token {v} --profile ci", rnd(120, B64)),
        ("npm config set _authToken", "npm config set //registry.npmjs.org/:_authToken {v}", rnd(36)),
        ("git config password", "git config --global credential.password {v}", rnd(18)),
        ("smbclient -U user%pass", "smbclient //nas/share -U backup%{v}", rnd(14)),
        ("wget --http-password", "wget --http-user=ci --http-password={v} https://artifacts.example.com/x.tgz", rnd(14)),
        ("openssl -passin pass:", "openssl rsa -in key.pem -passin pass:{v} -out plain.pem", rnd(14)),
        ("git extraheader", "git -c http.extraheader=\"AUTHORIZATION: bearer {v}\" clone https://git.example.com/x", rnd(40)),
    ]
    for form, tpl, v in forms:
        s(form, "issue14", tpl.format(v=v), v)


# ============================================================================ headers and cookies
def headers() -> None:
    forms = [
        ("Authorization: Basic", "Authorization: Basic {v}", base64.b64encode(f"u:{rnd(12)}".encode()).decode()),
        ("Authorization: Token", "Authorization: Token {v}", rnd(40, HEX)),
        ("Proxy-Authorization", "Proxy-Authorization: Basic {v}", base64.b64encode(f"p:{rnd(12)}".encode()).decode()),
        ("X-API-Key header", "X-API-Key: {v}", rnd(32)),
        ("X-Auth-Token header", "X-Auth-Token: {v}", rnd(40)),
        ("Private-Token header", "curl --header \"PRIVATE-TOKEN: {v}\" https://gitlab.example.com/api/v4/projects", rnd(20)),
        ("X-Vault-Token header", "X-Vault-Token: {v}", "hvs." + rnd(90)),
        ("api-key header (azure openai)", "api-key: {v}", rnd(32, HEX)),
        ("x-goog-api-key", "x-goog-api-key: {v}", rnd(39)),
        ("Ocp-Apim-Subscription-Key", "Ocp-Apim-Subscription-Key: {v}", rnd(32, HEX)),
        ("headers json", '{{"headers": {{"Authorization": "Bearer {v}"}}}}', rnd(48)),
        ("Cookie sessionid", "Cookie: sessionid={v}; csrftoken=abc", rnd(32, LOWNUM)),
        ("Cookie second value", "Cookie: theme=dark; session={v}", rnd(40)),
        ("Cookie csrftoken", "cookie: csrftoken={v}; sessionid=x", rnd(32)),
        ("Set-Cookie", "Set-Cookie: connect.sid={v}; Path=/; HttpOnly; Secure", "s%3A" + rnd(32) + "." + rnd(43)),
        ("Set-Cookie jwt", "set-cookie: access_token={v}; Max-Age=3600", "eyJhbGciOiJIUzI1NiJ9.eyJ" + rnd(40) + "." + rnd(43, ALNUM + "_-")),
        ("curl -b", "curl -b 'laravel_session={v}' https://app.example.com/admin", rnd(40)),
        ("curl --cookie", "curl --cookie \"SESSION={v}\" https://app.example.com/api", rnd(48)),
        ("Cookie in json", '{{"Cookie": "_session_id={v}"}}', rnd(32, HEX)),
    ]
    for form, tpl, v in forms:
        s(form, "issue14" if "ookie" in form else "curl-auth-header" if "curl" in tpl else "generic-api-key",
          tpl.format(v=v), v)


# ============================================================================ connection strings
def connections() -> None:
    pw = lambda: rnd(18)  # noqa: E731  # a one-line generator
    forms = [
        ("postgres://", "DATABASE_URL=postgres://app:{v}@db.internal:5432/app"),
        ("postgresql://", "engine = create_engine('postgresql+psycopg://etl:{v}@warehouse/analytics')"),
        ("mysql://", "mysql://root:{v}@127.0.0.1:3306/shop"),
        ("mongodb+srv://", "MONGO_URI=mongodb+srv://admin:{v}@cluster0.abcde.mongodb.net/?retryWrites=true"),
        ("mongodb://", "mongodb://app:{v}@mongo-0,mongo-1/app?replicaSet=rs0"),
        ("redis://:pw@", "REDIS_URL=redis://:{v}@cache:6379/0"),
        ("rediss://default:pw@", "rediss://default:{v}@redis-12345.cloud.redislabs.com:12345"),
        ("amqp://", "CELERY_BROKER_URL=amqp://celery:{v}@rabbit:5672//"),
        ("amqps://", "amqps://svc:{v}@b-1234.mq.us-east-1.amazonaws.com:5671"),
        ("mssql://", "mssql://sa:{v}@sqlserver:1433/master"),
        ("ftp://", "wget ftp://backup:{v}@ftp.example.com/dump.tar.gz"),
        ("smtp://", "EMAIL_URL=smtp://mailer:{v}@smtp.example.com:587"),
        ("https userinfo", "pip install --index-url https://ci:{v}@pypi.example.com/simple pkg"),
        ("http proxy userinfo", "export HTTPS_PROXY=http://alice:{v}@proxy.corp:3128"),
        ("jdbc ?password=", "jdbc:postgresql://db:5432/app?user=app&password={v}"),
        ("jdbc &password=", "jdbc:mysql://db:3306/app?useSSL=true&password={v}&user=app"),
        ("jdbc sqlserver ;password=", "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password={v};"),
        ("ado.net Password=", "Server=tcp:db.database.windows.net,1433;Database=app;User ID=sa;Password={v};Encrypt=true;"),
        ("ado.net lower password=", "Data Source=db;Initial Catalog=app;User Id=app;password={v};"),
    ]
    for form, tpl in forms:
        v = pw()
        s(form, "issue14", tpl.format(v=v), v)
    v = rnd(86, B64) + "=="
    s("azure storage AccountKey", "issue14",
      f"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={v};EndpointSuffix=core.windows.net", v)
    v = rnd(43, B64) + "="
    s("azure service bus SharedAccessKey", "issue14",
      f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={v}", v)
    v = rnd(40, ALNUM) + "%2B" + rnd(8) + "%3D"
    s("azure SAS sig=", "issue14",
      f"https://acme.blob.core.windows.net/c/x.zip?sv=2022-11-02&ss=b&srt=o&sp=r&se=2025-01-01T00:00:00Z&spr=https&sig={v}", v)
    v = rnd(86, B64) + "=="
    s("azure cosmos AccountKey", "issue14", f"AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey={v};", v)
    v = rnd(64, HEX)
    s("s3 presigned X-Amz-Signature", "issue14",
      f"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=900&X-Amz-Signature={v}", v)
    v = rnd(43, ALNUM + "_-")
    s("google chat webhook token", "issue14",
      f"https://chat.googleapis.com/v1/spaces/AAAA1234/messages?key={rnd(39)}&token={v}", v)
    v = rnd(40, HEX)
    s("git credentials store", "issue14", f"https://octocat:{v}@github.com", v)


# ============================================================================ high entropy
def entropy() -> None:
    forms = [
        ("bare base62 32 in prose", "here you go: {v} - paste it in the dashboard", rnd(32)),
        ("bare base62 40 alone", "{v}", rnd(40)),
        ("bare base62 48 in a list", "- staging: {v}\n- prod: pending", rnd(48)),
        ("bare base62 64 in json value", '{{"value": "{v}", "note": "rotate monthly"}}', rnd(64)),
        ("bare base64 40 (aws-like) far from keyword", "the second line of the csv was {v} and it failed", rnd(40, B64)),
        ("bare base64 44 with padding", "got back {v} from the vault call", rnd(43, B64) + "="),
        ("bare urlsafe 43 (token_urlsafe)", "generated {v} for the new service", rnd(43, B64U)),
        ("bare urlsafe 64", "use {v} in the header", rnd(64, B64U)),
        ("bare token after a colon", "prod: {v}", rnd(36)),
        ("near keyword: key:", "key: {v}", rnd(32)),
        ("near keyword: the key is", "the key for staging is {v}", rnd(32)),
        ("bare token in url path", "POST https://hooks.example.com/trigger/{v}/run", rnd(32)),
        ("bare token after =", "x={v}", rnd(30)),
        ("bare token in yaml unrelated key", "settings:\n  value: {v}", rnd(40)),
        ("bare token in markdown code", "`{v}`", rnd(32)),
        ("bare token in a table", "| prod | {v} | active |", rnd(40)),
        ("bare token in shell output", "$ cat ~/.config/app/key\n{v}\n$", rnd(44, B64)),
        ("bare token json-escaped newline", 'stdout: "ok\\n{v}\\n"', rnd(40)),
        ("bare token 24", "code {v} works", rnd(24)),
        ("bare token 28", "ref {v}", rnd(28)),
        ("k8s secret data random", "kind: Secret\ndata:\n  api-token: {v}", b64bytes(30)),
        ("telegram bare", "bot{v} answered", rnd(10, DIG) + ":AA" + rnd(33)),
    ]
    for form, tpl, v in forms:
        s(form, "issue14", tpl.format(v=v), v)


# ============================================================================ look-alikes
LOOKS: list[dict[str, str]] = []


def lk(form: str, text: str) -> None:
    LOOKS.append({"text": text, "form": form})


def lookalikes() -> None:
    for i in range(4):
        sha = rnd(40, HEX)
        lk("git sha", f"commit {sha}\nAuthor: Dev <dev@example.com>")
        lk("git short sha", f"{sha[:7]} Fix the retry loop in the uploader")
        lk("sha256 hex", f"{rnd(64, HEX)}  dist/app-1.{i}.0.tar.gz")
        lk("md5 hex", f"MD5 ({rnd(32, HEX)}) = ok")
        lk("uuid", f'{{"sessionId": "{uuid()}", "uuid": "{uuid()}"}}')
        lk("uppercase uuid", f"subscription {uuid().upper()}")
        lk("docker digest", f"nginx@sha256:{rnd(64, HEX)}")
        lk("npm integrity", f'"integrity": "sha512-{b64bytes(64)}"')
        lk("sri hash", f'<script src="/a.js" integrity="sha384-{b64bytes(48)}" crossorigin="anonymous"></script>')
        lk("go.sum", f"github.com/pkg/errors v0.9.{i} h1:{b64bytes(32)}")
        lk("pip hash", f"requests==2.31.0 --hash=sha256:{rnd(64, HEX)}")
        lk("claude tool id", f'{{"type": "tool_use", "id": "toolu_01{rnd(22)}", "name": "Bash"}}')
        lk("claude message id", f'"id": "msg_01{rnd(22)}", "requestId": "req_011C{rnd(20)}"')
        lk("claude server tool id", f"srvtoolu_01{rnd(22)}")
        lk("openai ids", f"chatcmpl-{rnd(29)} call_{rnd(24)}")
        lk("stripe object ids", f"cus_{rnd(14)} pi_{rnd(24)} evt_{rnd(24)}")
        lk("base64 png", "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + R.randbytes(300)).decode())
        lk("base64 jpeg (json)", json.dumps({"type": "base64", "media_type": "image/jpeg",
                                            "data": base64.b64encode(b"\xff\xd8\xff\xe0" + R.randbytes(240)).decode()}))
        lk("ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64bytes(32)[:43]} dev@laptop")
        lk("ssh rsa public key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{b64bytes(120)} ci@runner")
        lk("thinking signature", f'"signature": "Eq{rnd(2)}CkYICRgCKkA{b64bytes(300)}"')
        lk("long base64 blob (file body)", b64bytes(600))
    for _ in range(3):
        cert = b64bytes(600)
        lines = [cert[j:j + 64] for j in range(0, len(cert), 64)]
        lk("pem certificate", "-----BEGIN CERTIFICATE-----\nMIID" + lines[0][4:] + "\n" + "\n".join(lines[1:])
           + "\n-----END CERTIFICATE-----")
        lk("pem public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"
           + rnd(20) + "\n" + "\n".join(lines[1:4]) + "\n-----END PUBLIC KEY-----")
        lk("ipfs cid", f"ipfs://Qm{''.join(R.choice('123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz') for _ in range(44))}")
    texts = [
        ("semver", "bumped to 2.14.0-rc.3+build.20240611 and 1.0.0-alpha.beta.1"),
        ("file path unix", "/Users/dain/workspace/claude-code-log/claude_code_log/templates/transcript.html"),
        ("file path windows", r"C:\Users\Dain\AppData\Local\Temp\pytest-of-dain\pytest-42\test_redaction0\out.json"),
        ("macos temp path", "/var/folders/4n/2f7pppjd2_n0fftzg8vrlg040000gn/T/tmp6i8r8cem/project"),
        ("nix store path", "/nix/store/0c7ca9b7xwk0pr1zj8sxhg1h0x2cyxvh-python3-3.11.9/bin/python3"),
        ("java fqcn", "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"),
        ("camel identifier", "getBoundingClientRect removeAudioLayerSequenceEditor TestDeepManifestGenerator"),
        ("pascal identifier", "AbstractSingletonProxyFactoryBean XMLHttpRequestEventTarget"),
        ("snake identifier", "cache_creation_input_tokens ephemeral_1h_input_tokens test_format_todowrite_html_escaping"),
        ("kebab identifier", "coderabbit-review-extractor claude-sonnet-4-5-20250929"),
        ("screaming constant", "MAX_RETRY_ATTEMPTS_BEFORE_CIRCUIT_BREAKER_OPENS = 5"),
        ("test name", "tests/test_redact.py::test_private_key_without_end_line_is_redacted_to_end_of_text PASSED"),
        ("model ids", "'Qwen/Qwen3-Next-80B-A3B-Instruct', 'HuggingFaceTB/SmolLM3-3B', 'mistral-community/Mixtral-8x22B-v0.1'"),
        ("lorem", "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore."),
        ("prose about secrets", "Rotate the API token every 90 days; never paste a password or secret key into chat."),
        ("prose password reset", "the password reset flow sends a token by email and the secret expires after an hour"),
        ("hex colors", "color: #1a2b3c; background: #FFEEDD; border-color: #0f0"),
        ("css", ".btn-primary{background:linear-gradient(90deg,#4f46e5 0%,#7c3aed 100%);border-radius:.375rem}"),
        ("tailwind classes", 'className="flex items-center justify-between rounded-lg bg-slate-900/80 px-4 py-2"'),
        ("minified js", "function(e,t){return e.map(function(n){return n.id===t?Object.assign({},n,{done:!0}):n})}"),
        ("webpack chunk", "static/js/main.3f2a1b9c.chunk.js static/css/2.8e4b3c1d.chunk.css"),
        ("jwt header only", "the header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 decodes to alg HS256"),
        ("jwt-looking words", "eyJ is how base64 JSON starts; a JWT has three parts separated by dots"),
        ("aws arn", "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-20240101T000000"),
        ("aws resource ids", "i-0abcd1234efgh5678 ami-0c55b159cbfafe1f0 vpc-0a1b2c3d4e5f67890 sg-0123456789abcdef0"),
        ("aws example key", "AWS documents AKIAIOSFODNN7EXAMPLE and wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        ("azure resource id", "/subscriptions/8f8e3c1a-1111-4d2e-9a3b-5c6d7e8f9a0b/resourceGroups/rg-prod/providers/Microsoft.Storage/storageAccounts/acmeprod"),
        ("azurite dev connection string (no key)", "UseDevelopmentStorage=true"),
        ("placeholder password", "password=<your-password> and api_key: YOUR_API_KEY_HERE"),
        ("placeholder env refs", "DB_PASSWORD=${DB_PASSWORD} API_TOKEN=$API_TOKEN SECRET=%(secret)s"),
        ("masked key", "OPENAI_API_KEY=sk-...abcd and ghp_************************************"),
        ("url without password", "postgres://app@db.internal:5432/app and redis://localhost:6379/0"),
        ("url placeholder password", "postgres://user:password@localhost:5432/db and mongodb://{user}:{pass}@host"),
        ("sentry dsn public key", "https://" + rnd(32, HEX) + "@o123456.ingest.sentry.io/4504000000000000"),
        ("cli: password-stdin", "echo \"$CR_PAT\" | docker login ghcr.io -u USERNAME --password-stdin"),
        ("cli: curl -u prompt", "curl -u admin https://jenkins.example.com/api/json"),
        ("cli: curl -u vars", 'curl -u "$USER:$PASS" https://api.example.com'),
        ("cli: mysql -p prompt", "mysql -u root -p app"),
        ("cli: ssh -p port", "ssh -p 2222 deploy@10.0.0.5 && scp -P 2222 a.txt host:"),
        ("cli: docker run -p", "docker run -p 8080:80 -e MODE=dev nginx:1.25"),
        ("cli: help text", "  -p, --password string   Password\n      --password-stdin    Take the password from stdin"),
        ("cli: metavar", "usage: tool [--token TOKEN] [--api-key API_KEY] [--password PASSWORD]"),
        ("cli: aws configure region", "aws configure set region eu-west-1 --profile ci"),
        ("cookie code", "const cookies = document.cookie.split('; ').map(c => c.split('='))"),
        ("cookie prose", "Cookie consent banner copy: we use cookies to improve the site"),
        ("set-cookie attributes only", "Set-Cookie: theme=dark; Path=/; SameSite=Lax"),
        ("code: password param", "def login(user: str, password: str = '') -> bool:"),
        ("code: token from env", 'token = os.environ["GITHUB_TOKEN"]'),
        ("code: getenv", 'password = os.getenv("DB_PASSWORD")'),
        ("code: max_tokens", "resp = client.messages.create(model=m, max_tokens=8000, temperature=0)"),
        ("usage json", '{"input_tokens": 1532, "cache_creation_input_tokens": 8531, "output_tokens": 211}'),
        ("ip and mac", "10.0.12.7 fe80::1ff:fe23:4567:890a 00:1A:2B:3C:4D:5E"),
        ("timestamps", "2025-06-01T10:00:00.000Z 1717236000123 Sun, 01 Jun 2025 10:00:00 GMT"),
        ("phone and card test numbers", "+1-202-555-0173 4242424242424242 exp 12/34"),
        ("k8s pod names", "api-deployment-7fb96c846b-8xkzp worker-5d9c7b6f4-qz2lm"),
        ("version strings", "Python 3.11.7 (main, Dec  4 2023) [Clang 15.0.0 (clang-1500.0.40.1)] on darwin"),
        ("git log graph", "* 4b825dc (HEAD -> main, origin/main) Merge pull request #123 from acme/feature-x"),
        ("long english word", "antidisestablishmentarianism and pneumonoultramicroscopicsilicovolcanoconiosis"),
        ("base64 of short text", "echo SGVsbG8sIFdvcmxkIQ== | base64 -d"),
        ("public key fingerprint", "SHA256:" + b64bytes(32).rstrip("=") + " dev@laptop (ED25519)"),
        ("redaction markers", "[REDACTED:password] and [REDACTED:high_entropy] stay as they are"),
        ("ssh known_hosts", "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"),
        ("openai org id", "org-" + rnd(24) + " is the organisation"),
        ("agent id", "agent-a1b2c3d4 spawned with description Explore the repo"),
        ("npm lockfile", '"resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz", "integrity": "sha512-'
         + b64bytes(64) + '"'),
        ("yarn lockfile", "  integrity sha1-" + b64bytes(20)),
        ("cargo lock", 'checksum = "' + rnd(64, HEX) + '"'),
        ("docker image list", "REPOSITORY  TAG  IMAGE ID  CREATED  SIZE\nnginx  1.25  " + rnd(12, HEX) + "  2 weeks ago  187MB"),
        ("content hash filenames", "assets/index-" + rnd(8, ALNUM + "_-") + ".js assets/vendor-" + rnd(8, ALNUM) + ".css"),
        ("hf model revision", "revision=" + rnd(40, HEX)),
        ("s3 etag", 'ETag: "' + rnd(32, HEX) + '"'),
        ("graphql relay id", "node(id: \"VXNlcjox\")"),
        ("short random", "otp 483920 and ref ab12cd"),
        ("emoji text", "✅ tests pass 🎉 — see résumé.pdf"),
        ("windows sid", "S-1-5-21-3623811015-3361044348-30300820-1013"),
        ("bitcoin-like words", "the checksum of the archive is listed in SHA256SUMS.asc"),
        ("url with query", "https://www.google.com/search?q=redaction+rules&oq=redaction&sourceid=chrome&ie=UTF-8"),
        ("github url", "https://github.com/gitleaks/gitleaks/blob/" + rnd(40, HEX) + "/config/gitleaks.toml#L120"),
        ("markdown table", "| kind | example |\n| --- | --- |\n| uuid | 2c5941bd-b9de-41d6-9414-221d175776f7 |"),
        ("token counts prose", "the prompt used 12000 tokens; the token budget is 50000"),
        ("pass words", "bypass the compass; passport and password_hash = bcrypt.hash(password)"),
        ("api word", "the rapid API gateway returns api_url and api_version"),
        ("secret word", "secret_santa_assignments.csv and the secretary's notes"),
        ("key words", "monkey keyboard turkey primary_key sort_key=lambda x: x[0]"),
        ("auth words", "author authority authentication_method = 'oauth2'"),
        ("cred word", "credits and incredible credentials_path=/etc/app/creds.json"),
        ("login word", "login page redirects to /auth/login?next=/home after user.login()"),
        ("curl plain", 'curl -X POST -H "Content-Type: application/json" -d \'{"a":1}\' https://api.example.com'),
        ("signature word", "the signature= parameter is checked with hmac.compare_digest"),
        ("sig word", "sig=None # filled in later"),
        ("pem marker in code", '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"'),
        ("putty header without key", "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none"),
        ("k8s secret with refs", "kind: Secret\nstringData:\n  password: ${DB_PASSWORD}"),
        ("connection string without password", "Server=localhost;Database=app;Trusted_Connection=True;"),
        ("sas-looking params", "https://acme.blob.core.windows.net/c/x.zip?sv=2022-11-02&sp=r"),
        ("env without secrets", "NODE_ENV=production PORT=8080 LOG_LEVEL=debug"),
    ]
    for form, text in texts:
        lk(form, text)
    for _ in range(20):  # identifiers that mix case and digits
        words = ["get", "set", "User", "Account", "Http", "Client", "V2", "Config", "Loader", "S3", "Bucket",
                 "Handler", "Factory", "Test", "Data", "Model", "View", "Controller", "Async", "Json", "Parser",
                 "Request", "Response", "Token", "Cache", "Manager", "Service", "Provider", "Event", "Stream"]
        lk("generated identifier", "".join(R.choice(words) for _ in range(R.randint(5, 8))))


def main() -> None:
    providers()
    private_keys()
    keywords()
    commands()
    headers()
    connections()
    entropy()
    lookalikes()
    with (HERE / "secrets.jsonl").open("w") as f:
        for e in SECRETS:
            f.write(json.dumps(e) + "\n")
    with (HERE / "lookalikes.jsonl").open("w") as f:
        for e in LOOKS:
            f.write(json.dumps(e) + "\n")
    print(f"{len(SECRETS)} secrets, {len(LOOKS)} look-alikes")


if __name__ == "__main__":
    main()
