{
  description = "a cache";
  mirrors.redis = "docker.io/library/redis:7";
}
