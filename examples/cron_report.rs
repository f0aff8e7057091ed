//! Placeholder: the cron example lands with `CronTrigger`.
fn main() {}
