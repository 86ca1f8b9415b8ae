#!/bin/sh
# Entry point of the Streamcat image. CI runs this same script outside Docker.
#   entrypoint.sh serve     wait for the database, (optionally) migrate, serve with gunicorn
#   entrypoint.sh migrate   wait for the database, apply migrations, exit (compose's one-shot service)
#   entrypoint.sh bootstrap wait for the database, add the first admin user unless it exists, exit:
#                           STREAMCAT_ADMIN_USER (default admin), password from STREAMCAT_ADMIN_PASSWORD
#   entrypoint.sh CMD...    run any other command (streamcat backup, a shell...)
set -eu

STREAMCAT=${STREAMCAT_BIN:-streamcat}

wait_for_database() {
    deadline=$(( $(date +%s) + ${STREAMCAT_DB_WAIT_SECONDS:-60} ))
    until "$STREAMCAT" db current >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "entrypoint: database not reachable after ${STREAMCAT_DB_WAIT_SECONDS:-60}s" >&2
            "$STREAMCAT" db current  # print the real error
            exit 1
        fi
        sleep 1
    done
}

case "${1:-serve}" in
    serve)
        shift 2>/dev/null || true
        wait_for_database
        if [ "${STREAMCAT_MIGRATE_ON_START:-false}" = "true" ]; then
            "$STREAMCAT" db upgrade
        fi
        exec "$STREAMCAT" serve --host "${STREAMCAT_HOST:-0.0.0.0}" "$@"
        ;;
    migrate)
        wait_for_database
        exec "$STREAMCAT" db upgrade
        ;;
    bootstrap)
        wait_for_database
        # The password goes through a pipe, never the command line (which `ps` shows). Once the
        # user exists, nothing is read or changed, so this may run on every `compose up`.
        if ! printf '%s\n' "${STREAMCAT_ADMIN_PASSWORD:-}" \
                | "$STREAMCAT" users add "${STREAMCAT_ADMIN_USER:-admin}" --role admin --if-missing; then
            echo "entrypoint: could not add the first admin user; it needs STREAMCAT_ADMIN_PASSWORD" \
                 "(8 characters or more)" >&2
            exit 1
        fi
        ;;
    *)
        exec "$@"
        ;;
esac
