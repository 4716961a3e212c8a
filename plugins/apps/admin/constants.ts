// Names other plugins and the server share with the admin API and CLI.

/** Where the lead registers adminRoutes. */
export const ADMIN_PREFIX = '/admin/v1'

/** Admin bodies are small settings objects; anything near this size is a mistake. */
export const ADMIN_BODY_LIMIT_BYTES = 1024 * 1024
