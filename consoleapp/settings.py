"""Settings read from the environment (12-factor) with defaults that work on a fresh clone.

Every knob is an environment variable; the defaults give the embedded setup that `make run` starts:
SQLite and the secret key under the data dir, Redis on loopback, DEBUG off.
"""

import os
import secrets
import zoneinfo
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DATA_DIR = Path(os.environ.get("DLC_DATA_DIR", BASE_DIR / "var")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    # A key generated once and kept in the data dir survives restarts without anyone having to set it.
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG")
PRODUCTION = env_bool("DLC_PRODUCTION")
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
CSRF_FAILURE_VIEW = "consoleapp.errors.csrf_failure"  # a page with a way on, not Django's dead end

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # After HtmxMiddleware (it reads request.htmx): a sign-in redirect of an htmx request becomes HX-Redirect.
    "consoleapp.middleware.HtmxSignInRedirectMiddleware",
    # Under /api/: a 404 or 405 in the API's JSON error format, not an HTML page or an empty body.
    "jobs.api.JsonErrorsMiddleware",
]

ROOT_URLCONF = "consoleapp.urls"
WSGI_APPLICATION = "consoleapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "jobs.portal.nav",
            ],
        },
    },
]

_DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'console.sqlite3'}")
# PostgreSQL connections are kept (and health-checked) between requests: opening one (fork + SCRAM) took
# 17 ms, a third of the wizard POST's budget (bench/RESULTS.md). SQLite opens a file; nothing to keep.
DATABASES = {
    "default": dj_database_url.parse(
        _DATABASE_URL,
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60" if _DATABASE_URL.startswith("postgres") else "0")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the web server, worker and beat share one SQLite file without
    # "database is locked" errors under normal load.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not memory, so the integration tests' web, worker and beat processes share the test database.
    # One file per test run, so concurrent runs on one machine do not share (and destroy) each other's.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("DLC_TEST_DB") or str(DATA_DIR / f"test-{os.getpid()}.sqlite3")
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# Sign-in rate limit (jobs.ratelimit): failures per client IP + username, and per IP, within a window.
LOGIN_MAX_FAILURES = int(os.environ.get("LOGIN_MAX_FAILURES", "5"))
LOGIN_MAX_FAILURES_PER_IP = int(os.environ.get("LOGIN_MAX_FAILURES_PER_IP", "50"))
LOGIN_WINDOW_SECONDS = int(os.environ.get("LOGIN_WINDOW_SECONDS", "900"))
# Wrong API tokens per client IP within a window (jobs.ratelimit.token_failed): past it a 429, not a free guess.
API_TOKEN_MAX_FAILURES_PER_IP = int(os.environ.get("API_TOKEN_MAX_FAILURES_PER_IP", "20"))
API_TOKEN_FAILURE_WINDOW_SECONDS = int(os.environ.get("API_TOKEN_FAILURE_WINDOW_SECONDS", "60"))
# Behind a reverse proxy every request comes from the proxy's address; trust the address it appends.
LOGIN_TRUST_X_FORWARDED_FOR = env_bool("LOGIN_TRUST_X_FORWARDED_FOR")

# Company SSO through an authenticating proxy (docs/sso.md): the proxy passes the user name in a header.
REMOTE_USER_ENABLED = env_bool("DLC_REMOTE_USER")
DLC_REMOTE_USER_HEADER = os.environ.get("DLC_REMOTE_USER_HEADER", "X-Forwarded-User")
if REMOTE_USER_ENABLED:
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
        "jobs.sso.ProxyRemoteUserMiddleware",
    )
    AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.RemoteUserBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]

# Counters of the sign-in rate limit and cached ListEcsSpecs answers. Production runs several web
# processes, so they share Redis; the embedded setup's single process keeps them in memory.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    if not (PRODUCTION or os.environ.get("DLC_CACHE_URL"))
    else {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("DLC_CACHE_URL") or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/1"),
        "KEY_PREFIX": "dlc-console",
    }
}

LANGUAGE_CODE = "en-us"


def _time_zone() -> str:
    # Pages show times in this zone and name it (<time datetime> values carry their offset, so stay exact).
    # TIME_ZONE is the variable's older name, still read so existing deployments keep their zone.
    name = (os.environ.get("DLC_TIME_ZONE") or os.environ.get("TIME_ZONE") or "UTC").strip()
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"DLC_TIME_ZONE={name!r} is not a time zone name: use an IANA name such as UTC or Asia/Shanghai."
        ) from exc
    return name


TIME_ZONE = _time_zone()
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every request when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Without collectstatic (the embedded setup) whitenoise serves straight from the finders.
WHITENOISE_USE_FINDERS = not PRODUCTION

# Celery: Redis broker; tasks acknowledged late so a worker killed mid-task does not lose it.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Sending fails fast when Redis is down (one quick retry): callers keep what is owed in the database and the
# beat sweep enqueues it later, so no web request hangs on the broker. The worker's own consumer reconnects
# under broker_connection_* settings, not these.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 600, "max_retries": 1, "interval_start": 0,
                                   "interval_step": 0.2, "interval_max": 0.5}
CELERY_TIMEZONE = "UTC"
DLC_SYNC_INTERVAL = float(os.environ.get("DLC_SYNC_INTERVAL", "3"))
DLC_SWEEP_INTERVAL = float(os.environ.get("DLC_SWEEP_INTERVAL", "30"))
# How long a job may wait (no submit attempt, stop or log archive under way) before the sweep re-enqueues it.
DLC_SWEEP_AGE = float(os.environ.get("DLC_SWEEP_AGE", "120"))
# Transient-error retries of a submit (exponential backoff with jitter, base and cap in seconds).
DLC_SUBMIT_RETRIES = int(os.environ.get("DLC_SUBMIT_RETRIES", "8"))
DLC_RETRY_BASE_SECONDS = float(os.environ.get("DLC_RETRY_BASE_SECONDS", "1"))
DLC_RETRY_CAP_SECONDS = float(os.environ.get("DLC_RETRY_CAP_SECONDS", "60"))
# A workspace added to the console imports the DLC jobs created up to this many hours before (7 days is
# all ListJobs serves); jobs created later are imported as they appear.
DLC_IMPORT_LOOKBACK_HOURS = float(os.environ.get("DLC_IMPORT_LOOKBACK_HOURS", "168"))
# Seconds between a job ending and its pods' logs being archived (log shipping can lag the status).
DLC_ARCHIVE_DELAY = float(os.environ.get("DLC_ARCHIVE_DELAY", "5"))
# The job list counts each status up to this many jobs and shows "1,000+" beyond (jobs.listing.counts).
DLC_LIST_COUNT_CAP = int(os.environ.get("DLC_LIST_COUNT_CAP", "1000"))
# How long /healthz keeps each workspace's DLC check (jobs.health): anyone may call it, DLC is called once a period.
DLC_HEALTH_CACHE_SECONDS = float(os.environ.get("DLC_HEALTH_CACHE_SECONDS", "30"))
# The console's own address as users reach it, for links in what leaves the console (webhook payloads).
DLC_BASE_URL = os.environ.get("DLC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
# Webhook deliveries (jobs.notify): attempts per job end, and the first retry's wait in seconds (then x4).
DLC_WEBHOOK_ATTEMPTS = int(os.environ.get("DLC_WEBHOOK_ATTEMPTS", "4"))
DLC_WEBHOOK_RETRY_BASE_SECONDS = float(os.environ.get("DLC_WEBHOOK_RETRY_BASE_SECONDS", "30"))
# Where webhooks may POST (jobs.notify): never the server itself, link-local or cloud metadata addresses; private
# ranges (10/8, 172.16/12, 192.168/16, fc00::/7) only while DLC_WEBHOOK_ALLOW_PRIVATE is on (offline networks'
# chat relays are private). DLC_WEBHOOK_ALLOWED_HOSTS: comma list of host names, IPs or CIDRs allowed all the same.
DLC_WEBHOOK_ALLOW_PRIVATE = env_bool("DLC_WEBHOOK_ALLOW_PRIVATE", True)
DLC_WEBHOOK_ALLOWED_HOSTS = [h.strip() for h in os.environ.get("DLC_WEBHOOK_ALLOWED_HOSTS", "").split(",") if h.strip()]
# A webhook whose deliveries failed this many times in a row is paused (disabled, with the reason) until re-enabled.
DLC_WEBHOOK_PAUSE_AFTER = int(os.environ.get("DLC_WEBHOOK_PAUSE_AFTER", "20"))
# Users' own email notifications (jobs.notify_email) go out by SMTP when EMAIL_HOST is set. Without it, the
# embedded setup (`make run`, consoleapp.stack sets DLC_MAIL_DIR) writes each mail as a file there; anywhere else
# email is off, and the settings page says so rather than dropping mails. EMAIL_HOST_PASSWORD: only from here,
# never shown or logged (jobs.notify_email masks it in SMTP errors).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "").strip()
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL")
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("Set EMAIL_USE_TLS (STARTTLS, usually port 587) or EMAIL_USE_SSL (port 465), not both.")
# Seconds an SMTP exchange may take: the settings page's test mail waits for it.
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", "10"))
DEFAULT_FROM_EMAIL = os.environ.get("DLC_EMAIL_FROM") or "DLC Console <dlc-console@localhost>"
SERVER_EMAIL = DEFAULT_FROM_EMAIL
DLC_MAIL_DIR = os.environ.get("DLC_MAIL_DIR", "").strip()
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
elif DLC_MAIL_DIR:
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = DLC_MAIL_DIR
else:
    EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"  # "not configured" (jobs.notify_email)
# Most trials one hyperparameter sweep may launch (jobs.sweeps): each is a job on DLC.
DLC_SWEEP_MAX_TRIALS = int(os.environ.get("DLC_SWEEP_MAX_TRIALS", "50"))
# Running trials whose logs one view of a sweep page reads from DLC at most, for their values so far (jobs.scalars
# .sampled): each trial is read at most once per 30 s, however many look.
DLC_SWEEP_LIVE_READS = int(os.environ.get("DLC_SWEEP_LIVE_READS", "3"))
# Seconds between two looks for scheduled jobs that are due (jobs.schedules): a run starts at most this late.
DLC_SCHEDULE_INTERVAL = float(os.environ.get("DLC_SCHEDULE_INTERVAL", "30"))
# Fewest minutes between two runs of a cron schedule (jobs.schedules): "* * * * *" would flood DLC with jobs.
DLC_SCHEDULE_MIN_MINUTES = int(os.environ.get("DLC_SCHEDULE_MIN_MINUTES", "10"))
# Seconds between two looks at sweeps' running trials for median early stopping (jobs.early_stop), and how many
# trials' logs one look reads from DLC at most (each is GetPodLogs calls).
DLC_EARLY_STOP_INTERVAL = float(os.environ.get("DLC_EARLY_STOP_INTERVAL", "60"))
DLC_EARLY_STOP_MAX_CHECKS = int(os.environ.get("DLC_EARLY_STOP_MAX_CHECKS", "20"))
# Seconds between two looks at running jobs for the workspaces' idle policies (jobs.idle), and how many jobs one
# look measures at most (each is one or two GetJobMetrics calls), the least recently checked first.
DLC_IDLE_INTERVAL = float(os.environ.get("DLC_IDLE_INTERVAL", "300"))
DLC_IDLE_MAX_CHECKS = int(os.environ.get("DLC_IDLE_MAX_CHECKS", "20"))
# Seconds between two checks of every budgeted workspace's spend for budget alerts (jobs.budget_alerts); a job's
# end checks its workspace at once besides.
DLC_BUDGET_INTERVAL = float(os.environ.get("DLC_BUDGET_INTERVAL", "300"))
CELERY_BEAT_SCHEDULE = {
    # Periodic tasks expire after one interval: a backlog (worker down) must not replay every missed cycle.
    "sync-jobs": {"task": "jobs.tasks.sync_jobs", "schedule": DLC_SYNC_INTERVAL,
                  "options": {"expires": max(1.0, DLC_SYNC_INTERVAL)}},
    "sweep-stuck": {"task": "jobs.tasks.sweep_stuck", "schedule": DLC_SWEEP_INTERVAL,
                    "options": {"expires": max(1.0, DLC_SWEEP_INTERVAL)}},
    "run-schedules": {"task": "jobs.tasks.run_schedules", "schedule": DLC_SCHEDULE_INTERVAL,
                      "options": {"expires": max(1.0, DLC_SCHEDULE_INTERVAL)}},
    "stop-trials-early": {"task": "jobs.tasks.stop_trials_early", "schedule": DLC_EARLY_STOP_INTERVAL,
                          "options": {"expires": max(1.0, DLC_EARLY_STOP_INTERVAL)}},
    "check-idle": {"task": "jobs.tasks.check_idle", "schedule": DLC_IDLE_INTERVAL,
                   "options": {"expires": max(1.0, DLC_IDLE_INTERVAL)}},
    "check-budgets": {"task": "jobs.tasks.check_budgets", "schedule": DLC_BUDGET_INTERVAL,
                      "options": {"expires": max(1.0, DLC_BUDGET_INTERVAL)}},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")

# DLC backends. The embedded localdlc endpoint; a workspace with a blank endpoint uses the regional one.
LOCALDLC_ENDPOINT = os.environ.get("LOCALDLC_ENDPOINT", "127.0.0.1:8100")
# Production refuses localdlc workspaces unless explicitly allowed (it runs commands as the server user).
ALLOW_LOCALDLC = env_bool("DLC_ALLOW_LOCALDLC", default=not PRODUCTION)
# alibabacloud_credentials profile file (INI) that workspace credential profiles are read from.
DLC_CREDENTIALS_FILE = os.environ.get("ALIBABA_CLOUD_CREDENTIALS_FILE", "")
# The AccessKey pair of the embedded localdlc, in the same INI format (written by the run command).
LOCALDLC_CREDENTIALS_FILE = os.environ.get("LOCALDLC_CREDENTIALS_FILE", str(DATA_DIR / "localdlc-credentials.ini"))
DLC_READ_TIMEOUT_MS = int(os.environ.get("DLC_READ_TIMEOUT_MS", "10000"))
DLC_CONNECT_TIMEOUT_MS = int(os.environ.get("DLC_CONNECT_TIMEOUT_MS", "3000"))

# The key that encrypts registry passwords on their way to the worker. Never stored in the database.
DLC_SECRET_BOX_KEY = os.environ.get("DLC_SECRET_BOX_KEY", "")

DEMO_USERNAME = os.environ.get("DLC_DEMO_USER", "demo")
DEMO_PASSWORD = os.environ.get("DLC_DEMO_PASSWORD", "demo")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"one_line_403": {"()": "consoleapp.logfilters.OneLineForbidden"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"},
                # A 403 is one warning line (method, path, user), not a traceback per refused request.
                "django.request": {"filters": ["one_line_403"]}},
}

if PRODUCTION:
    from django.core.exceptions import ImproperlyConfigured

    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be off in production.")
    if DEMO_PASSWORD == "demo":
        raise ImproperlyConfigured("Set DLC_DEMO_PASSWORD: production refuses the default demo password.")
    if not os.environ.get("SECRET_KEY"):
        raise ImproperlyConfigured("Set SECRET_KEY in production.")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
