const [a, b, c] = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const portions = Math.min(a, Math.floor(b / 2), Math.floor(c / 4));
console.log(portions * 7);
