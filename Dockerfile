FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml constraints.txt ./
COPY consoleapp consoleapp
COPY jobs jobs
COPY localdlc localdlc
RUN pip install -c constraints.txt .
COPY . .
RUN useradd --system --home /app console && mkdir -p /data && chown console /data
USER console
ENV DLC_DATA_DIR=/data
EXPOSE 8000
CMD ["gunicorn", "consoleapp.wsgi", "--bind", "0.0.0.0:8000", "--workers", "4", "--access-logfile", "-"]
