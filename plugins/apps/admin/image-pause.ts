// What GET/POST/DELETE /admin/v1/images/pause answer: the pause of today (UTC), and when it ends by itself.

export interface ImagePauseView {
  paused: boolean
  /** The UTC day the answer is about. */
  day: string
  /** 00:00 UTC of the next day, when a pause ends by itself; null when not paused. */
  resumes_at: string | null
}

export function imagePauseView (day: string, paused: boolean, now: Date): ImagePauseView {
  const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString()
  return { paused, day, resumes_at: paused ? next : null }
}
