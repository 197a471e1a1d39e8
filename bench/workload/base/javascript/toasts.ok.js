const [n, k, l, c, d, p, nl, np] = require('fs')
  .readFileSync(0, 'utf8')
  .trim()
  .split(' ')
  .map(Number);
const toasts = Math.min(Math.floor((k * l) / nl), c * d, Math.floor(p / np));
console.log(Math.floor(toasts / n));
